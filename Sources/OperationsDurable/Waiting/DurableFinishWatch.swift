// Waiting for stored operations to finish: one listener per store and process, and a finish
// wakes only the waiters of its own operation.
#if Durable

@_spi(Engine) import Operations

/// How this process waits for a store's operations to finish.
///
/// A store keeps one (``DurableOperationStore/finishWatch``). While anybody waits, it
/// listens to the store's notifications once, keeps its waiters by operation, and wakes on a
/// finish only the waiters of that operation; the records of the operations awaited for their
/// output are read together, a chunk per read. A notification can be lost (a connection that
/// drops between NOTIFY and LISTEN): after the store reconnects, and every
/// ``recheckInterval`` while anybody waits, it reads the states of every awaited operation
/// in one read, for the whole process. Such a read never holds up the notifications that come
/// meanwhile, and is given up on after ``readDeadline``.
public final class DurableFinishWatch: Sendable {
    /// How often the watch reads the awaited operations again without a notification.
    public static let recheckInterval: Duration = .seconds(2)

    /// How long a read of the awaited operations' states may take before the watch gives up on
    /// it (a read sent just as the server went away may never be answered) and reads again at
    /// the next reconnect or recheck.
    public let readDeadline: Duration

    /// What the waiters are told when the store's notifications end (the store was shut down).
    static let stoppedTelling = DurableError(
        .databaseUnreachable, "the store stopped telling changes while operations were awaited")

    /// The most ids one read of states names.
    static let readChunk = 1_000

    private struct Waiter {
        var remaining: Set<DurableOperationID>
        var continuation: CheckedContinuation<Void, any Error>?
        var failure: DurableError?
        var cancelled = false
    }

    private struct State {
        var waiters: [Int: Waiter] = [:]
        /// The waiters of each awaited operation.
        var byOperation: [DurableOperationID: [Int]] = [:]
        /// The waiters for an operation's finished record, by operation and token.
        var recordWaiters: [DurableOperationID: [Int: CheckedContinuation<DurableRecord, any Error>]] = [:]
        /// Operations whose record is to be read for their waiters: just awaited, or finished.
        var toRead: Set<DurableOperationID> = []
        var reading = false
        /// A read of every awaited operation's state is under way; `recheckAgain` asks for one
        /// more when it ends.
        var rechecking = false
        var recheckAgain = false
        /// Waiters for any change (a finish, a reconnect, a recheck), by token.
        var changeWaiters: [Int: CheckedContinuation<Void, any Error>] = [:]
        /// Grows at each finish, reconnect and recheck.
        var changes: UInt64 = 0
        /// The callers inside a wait: the watch listens while there is one.
        var holds = 0
        var listener: Task<Void, Never>?
        var listenerGeneration = 0
        /// The store the listener listens to, while it does.
        var store: (any DurableOperationStore)?
        var nextToken = 0
    }

    private let state = Locked(State())

    public init(readDeadline: Duration = .seconds(10)) {
        self.readDeadline = readDeadline
    }

    // MARK: Waiting

    /// The operation's record once it has finished (read together with the records other
    /// callers await); throws ``DurableError`` `.notFound` when it is not stored, or the
    /// store's error when the read fails.
    func finishedRecord(of id: DurableOperationID, store: any DurableOperationStore) async throws -> DurableRecord {
        hold(store: store)
        defer { release() }
        let token = state.withLock { state -> Int in
            state.nextToken += 1
            return state.nextToken
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<DurableRecord, any Error>) in
                let (refusal, startReading) = state.withLock { state -> ((any Error)?, Bool) in
                    if Task.isCancelled { return (CancellationError(), false) }
                    if state.listener == nil { return (Self.stoppedTelling, false) }
                    state.recordWaiters[id, default: [:]][token] = continuation
                    return (nil, Self.read(id, &state))
                }
                if let refusal { continuation.resume(throwing: refusal) }
                if startReading { Task { await self.readRecords(store) } }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<DurableRecord, any Error>? in
                let continuation = state.recordWaiters[id]?.removeValue(forKey: token)
                if state.recordWaiters[id]?.isEmpty == true { state.recordWaiters[id] = nil }
                return continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Queues the operation's record to be read; returns whether the caller starts the reader.
    private static func read(_ id: DurableOperationID, _ state: inout State) -> Bool {
        state.toRead.insert(id)
        guard !state.reading else { return false }
        state.reading = true
        return true
    }

    /// Reads the queued records a chunk at a time until none is queued, and hands each
    /// finished one to its waiters; an unfinished one is read again when it finishes.
    private func readRecords(_ store: any DurableOperationStore) async {
        while true {
            let chunk = state.withLock { state -> [DurableOperationID] in
                // An operation whose waiters were woken (or gave up) meanwhile is not read.
                state.toRead = state.toRead.filter { state.recordWaiters[$0] != nil }
                let chunk = Array(state.toRead.prefix(Self.readChunk))
                state.toRead.subtract(chunk)
                if chunk.isEmpty { state.reading = false }
                return chunk
            }
            if chunk.isEmpty { return }
            let result: Result<[DurableRecord], any Error>
            do {
                result = .success(try await store.records(of: chunk))
            } catch {
                result = .failure(error)
            }
            let woken = state.withLock { state -> [(CheckedContinuation<DurableRecord, any Error>, Result<DurableRecord, any Error>)] in
                var woken: [(CheckedContinuation<DurableRecord, any Error>, Result<DurableRecord, any Error>)] = []
                func wake(_ id: DurableOperationID, _ outcome: Result<DurableRecord, any Error>) {
                    for continuation in (state.recordWaiters.removeValue(forKey: id) ?? [:]).values {
                        woken.append((continuation, outcome))
                    }
                }
                switch result {
                case .success(let records):
                    var found = Set<DurableOperationID>()
                    for record in records {
                        found.insert(record.id)
                        if record.state.isFinished { wake(record.id, .success(record)) }
                    }
                    for id in chunk where !found.contains(id) {
                        wake(id, .failure(DurableError(.notFound, "\(id) is not stored: never added, or pruned")))
                    }
                case .failure(let error):
                    for id in chunk { wake(id, .failure(error)) }
                }
                return woken
            }
            for (continuation, outcome) in woken { continuation.resume(with: outcome) }
        }
    }

    /// Returns once every operation of `ids` has finished; throws ``DurableError`` `.notFound`
    /// for one that is not stored, or when the store stops telling changes.
    func waitUntilFinished(_ ids: Set<DurableOperationID>, store: any DurableOperationStore) async throws {
        if ids.isEmpty { return }
        let token = register(ids, store: store)
        defer { unregister(token) }
        let sorted = ids.sorted()
        var index = 0
        while index < sorted.count {
            let chunk = Array(sorted[index..<min(sorted.count, index + Self.readChunk)])
            index += chunk.count
            let states = try await store.states(of: chunk)
            if let missing = chunk.first(where: { states[$0] == nil }) {
                throw DurableError(.notFound, "\(missing) is not stored: never added, or pruned")
            }
            for (id, state) in states where state.isFinished { finished(id) }
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    guard let waiter = state.waiters[token] else {
                        preconditionFailure("durable finish watch: waiter \(token) waits without being registered")
                    }
                    if waiter.cancelled { return .failure(CancellationError()) }
                    if let failure = waiter.failure { return .failure(failure) }
                    if waiter.remaining.isEmpty { return .success(()) }
                    state.waiters[token]!.continuation = continuation
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                state.waiters[token]?.cancelled = true
                let continuation = state.waiters[token]?.continuation
                state.waiters[token]?.continuation = nil
                return continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Returns once `condition` holds, reading it again after each change the store tells
    /// (a finish of any operation, a reconnect) and every ``recheckInterval``: changes that
    /// come while it reads are folded into one more read.
    func waitUntil(store: any DurableOperationStore, _ condition: () async throws -> Bool) async throws {
        hold(store: store)
        defer { release() }
        while true {
            let seen = state.withLock { $0.changes }
            if try await condition() { return }
            try await waitForChange(after: seen)
        }
    }

    private func waitForChange(after seen: UInt64) async throws {
        let token = state.withLock { state -> Int in
            state.nextToken += 1
            return state.nextToken
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.changes != seen || Task.isCancelled { return .success(()) }
                    // Held but not listening: the store's notifications ended, and no change
                    // would ever come.
                    if state.listener == nil { return .failure(Self.stoppedTelling) }
                    state.changeWaiters[token] = continuation
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            state.withLock { $0.changeWaiters.removeValue(forKey: token) }?.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    // MARK: Registering

    private func register(_ ids: Set<DurableOperationID>, store: any DurableOperationStore) -> Int {
        let (token, stop) = state.withLock { state -> (Int, Task<Void, Never>?) in
            state.nextToken += 1
            let token = state.nextToken
            state.waiters[token] = Waiter(remaining: ids)
            for id in ids { state.byOperation[id, default: []].append(token) }
            return (token, holdLocked(&state, store: store))
        }
        stop?.cancel()
        return token
    }

    private func unregister(_ token: Int) {
        let stop = state.withLock { state -> Task<Void, Never>? in
            if let waiter = state.waiters.removeValue(forKey: token) {
                for id in waiter.remaining {
                    state.byOperation[id]?.removeAll { $0 == token }
                    if state.byOperation[id]?.isEmpty == true { state.byOperation[id] = nil }
                }
            }
            return releaseLocked(&state)
        }
        stop?.cancel()
    }

    private func hold(store: any DurableOperationStore) {
        state.withLock { state in _ = holdLocked(&state, store: store) }
    }

    private func release() {
        state.withLock { releaseLocked(&$0) }?.cancel()
    }

    /// Starts listening with the first hold. The subscription is made under the lock, before
    /// the caller reads any state, so that a finish after that read is heard; subscribing only
    /// registers a stream with the store and calls nothing back.
    private func holdLocked(_ state: inout State, store: any DurableOperationStore) -> Task<Void, Never>? {
        state.holds += 1
        guard state.listener == nil else { return nil }
        state.listenerGeneration += 1
        let generation = state.listenerGeneration
        let notifications = store.notifications()
        state.store = store
        state.listener = Task { await self.listen(notifications, store: store, generation: generation) }
        return nil
    }

    /// Stops listening with the last release; returns the listener to cancel.
    private func releaseLocked(_ state: inout State) -> Task<Void, Never>? {
        state.holds -= 1
        precondition(state.holds >= 0, "durable finish watch: released more often than held")
        guard state.holds == 0 else { return nil }
        let listener = state.listener
        state.listener = nil
        state.store = nil
        return listener
    }

    // MARK: Listening

    private func listen(
        _ notifications: AsyncStream<DurableStoreNotification>, store: any DurableOperationStore, generation: Int
    ) async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                while !Task.isCancelled {
                    do {
                        try await Task.sleep(for: Self.recheckInterval)
                    } catch {
                        return
                    }
                    if self.startRecheck() { await self.recheckUntilCaughtUp(store) }
                }
            }
            for await notification in notifications {
                switch notification {
                case .finished(let id): finished(id)
                case .resynchronize:
                    // Beside the notifications, not in their way: a finish told while the read
                    // waits still wakes its waiters.
                    if startRecheck() { group.addTask { await self.recheckUntilCaughtUp(store) } }
                case .workAvailable, .cancelRequested: continue
                }
            }
            group.cancelAll()
        }
        if Task.isCancelled { return }
        // The store stopped telling changes (it was shut down): the waiters would wait for ever.
        let failed = state.withLock {
            state -> ([CheckedContinuation<Void, any Error>], [CheckedContinuation<DurableRecord, any Error>]) in
            guard state.listenerGeneration == generation, state.listener != nil else { return ([], []) }
            state.listener = nil
            state.store = nil
            var failed: [CheckedContinuation<Void, any Error>] = []
            for token in Array(state.waiters.keys) {
                state.waiters[token]!.failure = Self.stoppedTelling
                if let continuation = state.waiters[token]!.continuation { failed.append(continuation) }
                state.waiters[token]!.continuation = nil
            }
            failed.append(contentsOf: state.changeWaiters.values)
            state.changeWaiters = [:]
            let records = state.recordWaiters.values.flatMap(\.values)
            state.recordWaiters = [:]
            return (failed, records)
        }
        for continuation in failed.0 { continuation.resume(throwing: Self.stoppedTelling) }
        for continuation in failed.1 { continuation.resume(throwing: Self.stoppedTelling) }
    }

    /// Returns whether the caller starts the read of every awaited operation; when one is under
    /// way, it asks that one for one more read instead.
    private func startRecheck() -> Bool {
        state.withLock { state in
            if state.rechecking {
                state.recheckAgain = true
                return false
            }
            state.rechecking = true
            return true
        }
    }

    private func recheckUntilCaughtUp(_ store: any DurableOperationStore) async {
        while true {
            await recheck(store)
            let again = state.withLock { state -> Bool in
                if state.recheckAgain, !Task.isCancelled {
                    state.recheckAgain = false
                    return true
                }
                state.rechecking = false
                state.recheckAgain = false
                return false
            }
            if !again { return }
        }
    }

    /// Reads the states of every awaited operation, in chunks, and wakes whoever waits for a change.
    private func recheck(_ store: any DurableOperationStore) async {
        let awaited = state.withLock { Array(Set($0.byOperation.keys).union($0.recordWaiters.keys)) }
        var index = 0
        while index < awaited.count {
            let chunk = Array(awaited[index..<min(awaited.count, index + Self.readChunk)])
            index += chunk.count
            guard
                let states = try? await withDeadline(readDeadline, "reading the states of awaited operations", {
                    try await store.states(of: chunk)
                })
            else { break }
            for id in chunk where states[id]?.isFinished ?? true { finished(id) }
        }
        changed()
    }

    /// One operation finished: wakes its waiters whose operations have all finished.
    private func finished(_ id: DurableOperationID) {
        let (woken, startReading) = state.withLock { state -> ([CheckedContinuation<Void, any Error>], Bool) in
            var woken = Self.takeChangeWaiters(&state)
            let startReading = state.recordWaiters[id] != nil && Self.read(id, &state)
            guard let tokens = state.byOperation.removeValue(forKey: id) else { return (woken, startReading) }
            for token in tokens {
                guard state.waiters[token]?.remaining.remove(id) != nil, state.waiters[token]!.remaining.isEmpty,
                    let continuation = state.waiters[token]!.continuation
                else { continue }
                state.waiters[token]!.continuation = nil
                woken.append(continuation)
            }
            return (woken, startReading)
        }
        for continuation in woken { continuation.resume() }
        if startReading, let store = state.withLock({ $0.store }) { Task { await self.readRecords(store) } }
    }

    private func changed() {
        for continuation in state.withLock({ Self.takeChangeWaiters(&$0) }) { continuation.resume() }
    }

    private static func takeChangeWaiters(_ state: inout State) -> [CheckedContinuation<Void, any Error>] {
        state.changes &+= 1
        guard !state.changeWaiters.isEmpty else { return [] }
        let waiters = Array(state.changeWaiters.values)
        state.changeWaiters = [:]
        return waiters
    }

    // MARK: Seeing

    /// How many operations are awaited and how many callers wait, for tests and diagnostics.
    package var waiting: (operations: Int, holds: Int, listening: Bool) {
        state.withLock { (Set($0.byOperation.keys).union($0.recordWaiters.keys).count, $0.holds, $0.listener != nil) }
    }
}
#endif

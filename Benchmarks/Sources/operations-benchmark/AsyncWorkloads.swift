import Foundation
import Operations
import class Operations.OperationQueue
import Synchronization

/// Runs `body` on the cooperative pool and blocks the calling thread until it returns
/// (the benchmark's driver is synchronous top-level code).
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let box = Mutex<Swift.Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        let result: Swift.Result<T, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        box.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try box.withLock { $0! }.get()
}

/// Counts bodies in flight and the most seen at once.
final class InFlight: Sendable {
    private let state = Mutex((now: 0, most: 0))
    func enter() { state.withLock { $0.now += 1; $0.most = max($0.most, $0.now) } }
    func leave() { state.withLock { $0.now -= 1 } }
    var most: Int { state.withLock { $0.most } }
}

/// The async rows: an operation queue as a concurrency limiter for async work, against
/// the usual hand-written TaskGroup limiter and an unlimited TaskGroup.
enum AsyncWorkloads {
    static let limit = 4

    /// The body every row runs: one suspension point, so that bodies really suspend.
    @Sendable static func body(_ inFlight: InFlight) async -> Int {
        inFlight.enter()
        await Task.yield()
        inFlight.leave()
        return 1
    }

    /// N async closures through a queue with limit 4.
    static func queueLimited(_ n: Int) throws -> UInt64 {
        try blocking {
            let queue = Operations.OperationQueue()
            queue.maxConcurrentOperationCount = limit
            let inFlight = InFlight()
            let start = now()
            for _ in 0..<n { queue.addOperation { await body(inFlight) } }
            await queue.waitUntilAllOperationsAreFinished()
            let elapsed = now() - start
            try check(inFlight.most <= limit, "queue limit 4: \(inFlight.most) bodies at once")
            return elapsed
        }
    }

    /// N async closures as a user writes them outside async code: an `AsyncBlockOperation`
    /// added one at a time from a thread, a queue whose quality of service was never set,
    /// and the thread waiting for the queue.
    static func queueLimitedFromThread(_ n: Int) throws -> UInt64 {
        let queue = Operations.OperationQueue()
        queue.maxConcurrentOperationCount = limit
        let inFlight = InFlight()
        let start = now()
        for _ in 0..<n { queue.addOperation(AsyncBlockOperation { await body(inFlight) }) }
        queue.waitUntilAllOperationsAreFinished()
        let elapsed = now() - start
        try check(inFlight.most <= limit, "queue limit 4 from a thread: \(inFlight.most) bodies at once")
        return elapsed
    }

    /// N `AsyncBlockOperation`s made first, then added in one batch to a queue with limit 4
    /// (the queue's side of the limiter: the body is the same).
    static func queueLimitedBatch(_ n: Int) throws -> UInt64 {
        try blocking {
            let queue = Operations.OperationQueue()
            queue.maxConcurrentOperationCount = limit
            let inFlight = InFlight()
            let start = now()
            let operations = (0..<n).map { _ in AsyncBlockOperation { await body(inFlight) } }
            queue.addOperations(operations, waitUntilFinished: false)
            await queue.waitUntilAllOperationsAreFinished()
            let elapsed = now() - start
            try check(inFlight.most <= limit, "batch limit 4: \(inFlight.most) bodies at once")
            try check(operations.allSatisfy { $0.result != nil }, "batch limit 4: not all finished")
            return elapsed
        }
    }

    /// The same work as N synchronous BlockOperations through a queue with limit 4 (no
    /// suspension point: the synchronous row the async one is compared with).
    static func queueLimitedSynchronous(_ n: Int) throws -> UInt64 {
        let queue = Operations.OperationQueue()
        queue.maxConcurrentOperationCount = limit
        let inFlight = InFlight()
        let start = now()
        for _ in 0..<n { queue.addOperation { inFlight.enter(); inFlight.leave() } }
        queue.waitUntilAllOperationsAreFinished()
        let elapsed = now() - start
        try check(inFlight.most <= limit, "sync limit 4: \(inFlight.most) at once")
        return elapsed
    }

    /// The usual workaround: a TaskGroup that starts a new child each time one finishes.
    static func taskGroupLimiter(_ n: Int) throws -> UInt64 {
        try blocking {
            let inFlight = InFlight()
            let start = now()
            let total = await withTaskGroup(of: Int.self) { group in
                var started = 0, sum = 0
                while started < min(limit, n) {
                    group.addTask { await body(inFlight) }
                    started += 1
                }
                while let value = await group.next() {
                    sum += value
                    if started < n {
                        group.addTask { await body(inFlight) }
                        started += 1
                    }
                }
                return sum
            }
            let elapsed = now() - start
            try check(total == n && inFlight.most <= limit, "TaskGroup limiter: \(total) of \(n), \(inFlight.most) at once")
            return elapsed
        }
    }

    /// A TaskGroup with no limit.
    static func taskGroupUnlimited(_ n: Int) throws -> UInt64 {
        try blocking {
            let inFlight = InFlight()
            let start = now()
            let total = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<n { group.addTask { await body(inFlight) } }
                return await group.reduce(0, +)
            }
            let elapsed = now() - start
            try check(total == n, "TaskGroup: \(total) of \(n)")
            return elapsed
        }
    }

    /// N typed operations on a default queue, each value awaited in turn.
    static func awaitValues(_ n: Int) throws -> UInt64 {
        try blocking {
            let queue = Operations.OperationQueue()
            let start = now()
            let operations = (0..<n).map { index in ValueBlockOperation { index } }
            queue.addOperations(operations, waitUntilFinished: false)
            var sum = 0
            for operation in operations { sum += try await operation.value }
            let elapsed = now() - start
            try check(sum == n * (n - 1) / 2, "await value: wrong sum \(sum)")
            return elapsed
        }
    }

    /// The same with tasks: N child tasks' values awaited in turn.
    static func awaitTaskValues(_ n: Int) throws -> UInt64 {
        try blocking {
            let start = now()
            let tasks = (0..<n).map { index in Task { index } }
            var sum = 0
            for task in tasks { sum += await task.value }
            let elapsed = now() - start
            try check(sum == n * (n - 1) / 2, "await Task.value: wrong sum \(sum)")
            return elapsed
        }
    }

    /// A chain of N `then` stages (synchronous transforms), the last value awaited.
    static func thenChain(_ n: Int) throws -> UInt64 {
        try blocking {
            let queue = Operations.OperationQueue()
            let start = now()
            let first = ValueBlockOperation { 0 }
            var operations: [ValueOperation<Int>] = [first]
            operations.reserveCapacity(n)
            for _ in 1..<n { operations.append(operations.last!.then { $0 + 1 }) }
            queue.addOperations(operations, waitUntilFinished: false)
            let last = try await operations.last!.value
            let elapsed = now() - start
            try check(last == n - 1, "then chain: \(last) at the end of \(n) stages")
            return elapsed
        }
    }

    /// Resident memory per suspended async operation: N bodies suspended on a gate at once
    /// (default queue, no limit). Run in a child process.
    static func suspendedMemory(_ n: Int) -> Double {
        let gate = Mutex<[CheckedContinuation<Void, Never>]>([])
        let entered = Mutex(0)
        let before = residentBytes()
        let queue = Operations.OperationQueue()
        let operations = (0..<n).map { _ in
            AsyncBlockOperation {
                await withCheckedContinuation { continuation in
                    gate.withLock { $0.append(continuation) }
                    entered.withLock { $0 += 1 }
                }
            }
        }
        queue.addOperations(operations, waitUntilFinished: false)
        while entered.withLock({ $0 }) < n { usleep(1_000) }
        let during = residentBytes()
        for continuation in gate.withLock({ $0 }) { continuation.resume() }
        queue.waitUntilAllOperationsAreFinished()
        return Double(during - before) / Double(n)
    }

    /// The same for N suspended child tasks of a TaskGroup.
    static func suspendedTaskMemory(_ n: Int) -> Double {
        final class State: Sendable {
            let gate = Mutex<[CheckedContinuation<Void, Never>]>([])
            let entered = Mutex(0)
            let measured = Mutex(0)
        }
        let state = State()
        let before = residentBytes()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<n {
                    group.addTask {
                        await withCheckedContinuation { continuation in
                            state.gate.withLock { $0.append(continuation) }
                            state.entered.withLock { $0 += 1 }
                        }
                    }
                }
                while state.entered.withLock({ $0 }) < n { await Task.yield() }
                state.measured.withLock { $0 = residentBytes() }
                for continuation in state.gate.withLock({ $0 }) { continuation.resume() }
            }
            done.signal()
        }
        done.wait()
        return Double(state.measured.withLock { $0 } - before) / Double(n)
    }
}

// MARK: The classic asynchronous subclass

/// The tutorials' asynchronous operation, written once per framework as its users write
/// it: a `state` with announcements of `isExecuting` and `isFinished`, `start()` launching
/// a task whose body suspends once and then finishes the operation.
final class ClassicAsyncOperation: Operations.Operation, @unchecked Sendable {
    private enum State { case ready, executing, finished }
    private let lock = NSLock()
    private var state = State.ready
    private let inFlight: InFlight

    init(_ inFlight: InFlight) { self.inFlight = inFlight }

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { lock.withLock { state == .executing } }
    override var isFinished: Bool { lock.withLock { state == .finished } }

    override func start() {
        if isCancelled { return move(to: .finished) }
        move(to: .executing)
        let inFlight = inFlight
        Task {
            _ = await AsyncWorkloads.body(inFlight)
            self.move(to: .finished)
        }
    }

    private func move(to next: State) {
        willChangeValue(forKey: "isExecuting")
        willChangeValue(forKey: "isFinished")
        lock.withLock { state = next }
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
    }
}

/// The same class on Foundation.
final class FoundationClassicAsyncOperation: Foundation.Operation, @unchecked Sendable {
    private enum State { case ready, executing, finished }
    private let lock = NSLock()
    private var state = State.ready
    private let inFlight: InFlight

    init(_ inFlight: InFlight) { self.inFlight = inFlight }

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { lock.withLock { state == .executing } }
    override var isFinished: Bool { lock.withLock { state == .finished } }

    override func start() {
        if isCancelled { return move(to: .finished) }
        move(to: .executing)
        let inFlight = inFlight
        Task {
            _ = await AsyncWorkloads.body(inFlight)
            self.move(to: .finished)
        }
    }

    private func move(to next: State) {
        willChangeValue(forKey: "isExecuting")
        willChangeValue(forKey: "isFinished")
        lock.withLock { state = next }
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
    }
}

extension AsyncWorkloads {
    /// N classic asynchronous subclasses through a queue with limit 4, on Operations.
    /// `quality`: the queue's quality of service when set (a queue's default is background,
    /// and its workers then run at background priority, as on Darwin).
    static func classicSubclass(_ n: Int, quality: QualityOfService? = nil) throws -> UInt64 {
        let queue = Operations.OperationQueue()
        queue.maxConcurrentOperationCount = limit
        if let quality { queue.qualityOfService = quality }
        let inFlight = InFlight()
        let operations = (0..<n).map { _ in ClassicAsyncOperation(inFlight) }
        let start = now()
        queue.addOperations(operations, waitUntilFinished: false)
        queue.waitUntilAllOperationsAreFinished()
        let elapsed = now() - start
        try check(inFlight.most <= limit, "classic subclass limit 4: \(inFlight.most) at once")
        try check(operations.allSatisfy(\.isFinished), "classic subclass: not all finished")
        return elapsed
    }

    /// The same on Foundation.
    static func foundationClassicSubclass(_ n: Int, quality: QualityOfService? = nil) throws -> UInt64 {
        let queue = Foundation.OperationQueue()
        queue.maxConcurrentOperationCount = limit
        if let quality { queue.qualityOfService = quality }
        let inFlight = InFlight()
        let operations = (0..<n).map { _ in FoundationClassicAsyncOperation(inFlight) }
        let start = now()
        queue.addOperations(operations, waitUntilFinished: false)
        queue.waitUntilAllOperationsAreFinished()
        let elapsed = now() - start
        try check(inFlight.most <= limit, "Foundation classic subclass limit 4: \(inFlight.most) at once")
        try check(operations.allSatisfy(\.isFinished), "Foundation classic subclass: not all finished")
        return elapsed
    }
}

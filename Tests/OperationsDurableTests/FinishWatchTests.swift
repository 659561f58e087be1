// The process's watch over a store's finishes when the store misbehaves: a read that is never
// answered, and notifications that end while somebody waits.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import Operations
@testable import OperationsDurable
import OperationsTestSupport
import Synchronization
import Testing

@Suite("The finish watch when the store misbehaves", .timeLimit(.minutes(2)))
struct FinishWatchTests {
    @Test("a finish told while the watch re-reads the awaited operations wakes its waiter without waiting for that read", arguments: StoreKind.all)
    func finishHeardWhileARecheckWaits(_ kind: StoreKind) async throws {
        try await withStore(kind) { base in
            // The waiter's own first read passes; every later read (the watch's) waits.
            let watched = WatchedWait(over: base) { read in read >= 2 }
            defer { watched.unanswered.open() }
            let (handle, waiter) = try await watched.waitForAnOperationUntilTheWatchReads()
            try await withWorkers(store: base, concurrency: 1) { _ async throws in
                try await within(30, "the wait, while the watch's read is unanswered") {
                    try await withTaskCancellationHandler { try await waiter.value } onCancel: { waiter.cancel() }
                }
            }
            #expect(try await handle.state == .succeeded)
        }
    }

    @Test("a read of the awaited operations that is never answered is given up on, and the watch reads again", arguments: StoreKind.all)
    func unansweredRecheckIsGivenUp(_ kind: StoreKind) async throws {
        try await withStore(kind) { base in
            // The waiter's own first read passes; the watch's next two are never answered.
            let watched = WatchedWait(over: base, finishWatch: DurableFinishWatch(readDeadline: .milliseconds(200))) { read in
                read == 2 || read == 3
            }
            defer { watched.unanswered.open() }
            let (_, waiter) = try await watched.waitForAnOperationUntilTheWatchReads()
            watched.store.inject(.resynchronize)
            // Two unanswered reads, each given up on at its deadline, then an answered one.
            try await pollUntil(30, "a read after the unanswered ones") { watched.reads() >= 4 }
            waiter.cancel()
            await #expect(throws: CancellationError.self) { try await waiter.value }
        }
    }

    @Test("a drain wait that is counting when the store's notifications end throws instead of waiting for ever", arguments: StoreKind.all)
    func drainWaitEndsWhenNotificationsEnd(_ kind: StoreKind) async throws {
        try await withStore(kind) { base in
            let counted = InterceptingStore(base, hooks: .init())
            let queue = DurableQueue(name: "default", store: counted)
            _ = try await queue.add(Echo.self, input: 1)
            let counts = Atomic<Int>(0)
            let watch = counted.finishWatch
            let outcome: Result<Void, any Error> = try await within(30, "the drain wait") {
                do {
                    try await watch.waitUntil(store: counted) {
                        // The first count: the notifications end, and the watch has taken it in,
                        // before the count answers.
                        if counts.add(1, ordering: .relaxed).newValue == 1 {
                            counted.endNotifications()
                            try await pollUntil(30, "the watch's end of listening") { !watch.waiting.listening }
                        }
                        return try await counted.unfinishedCount(queue: "default") == 0
                    }
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            switch outcome {
            case .success: Issue.record("the wait returned with an unfinished operation")
            case .failure(let error as DurableError): #expect(error.code == .databaseUnreachable)
            case .failure(let error): Issue.record("unexpected error: \(error)")
            }
            #expect(watch.waiting.holds == 0)
        }
    }
}

/// A store over `base` that counts its reads of operation states and leaves unanswered
/// (until `unanswered` opens) those whose number (from 1) `isUnanswered` picks.
private struct WatchedWait {
    let store: InterceptingStore
    let reads = Shared(0)
    let unanswered = TestGate()

    init(
        over base: any DurableOperationStore, finishWatch: DurableFinishWatch = DurableFinishWatch(),
        isUnanswered: @escaping @Sendable (Int) -> Bool
    ) {
        var hooks = InterceptingStore.Hooks()
        hooks.beforeStates = { [reads, unanswered] _ in
            if isUnanswered(reads.update { $0 += 1; return $0 }) { await unanswered.waitIgnoringCancellation() }
        }
        store = InterceptingStore(base, hooks: hooks, finishWatch: finishWatch)
    }

    /// Adds an operation and a task that waits for it; returns once the waiter's own read
    /// passed and the watch, told to resynchronize, began its read.
    func waitForAnOperationUntilTheWatchReads() async throws -> (DurableHandle<Echo>, Task<Void, any Error>) {
        let queue = DurableQueue(name: "default", store: store)
        let handle = try await queue.add(Echo.self, input: 1)
        let waiter = Task { try await queue.waitUntilFinished([handle]) }
        try await pollUntil(30, "the waiter's first read") { reads() >= 1 }
        store.inject(.resynchronize)
        try await pollUntil(30, "the watch's first read, unanswered") { reads() >= 2 }
        return (handle, waiter)
    }
}
#endif

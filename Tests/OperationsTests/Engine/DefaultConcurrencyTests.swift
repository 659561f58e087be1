import Operations
import OperationsComposition
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The default limit: operations that block overlap (as on Darwin), CPU-bound ones run
/// about one per processor.
@Suite("Default concurrency: blocked operations overlap, CPU-bound ones do not oversubscribe")
struct DefaultConcurrencyTests {
    /// Spins until this thread has used `nanoseconds` of CPU time (not wall time: on a
    /// loaded machine the work takes longer, but it is the same work).
    static func burnCPU(nanoseconds: UInt64) {
        func used() -> UInt64 {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
        }
        let start = used()
        while used() - start < nanoseconds {}
    }

    /// Adds 64 operations to `queue` that each burn `nanoseconds` of CPU time, counted by
    /// `meter` while they do; returns the meter.
    static func addCPUBoundOperations(burning nanoseconds: UInt64, to queue: OperationQueue) -> ConcurrencyMeter {
        let meter = ConcurrencyMeter()
        for _ in 0..<64 {
            queue.addOperation {
                meter.enter()
                burnCPU(nanoseconds: nanoseconds)
                meter.leave()
            }
        }
        return meter
    }

    @Test("64 CPU-bound operations on a default queue run about one per processor")
    func cpuBound() {
        let queue = OperationQueue()
        let meter = Self.addCPUBoundOperations(burning: 8_000_000, to: queue)
        queue.waitUntilAllOperationsAreFinished()
        let processors = ProcessInfo.processInfo.activeProcessorCount
        #expect(meter.most <= 2 * processors, "ran \(meter.most) at once on \(processors) processors")
    }

    @Test("A second ready operation gets a free processor while a computing one runs", .enabled(if: ProcessInfo.processInfo.activeProcessorCount >= 2))
    func computingOperationDoesNotStarveTheNext() {
        final class Flag: Sendable {
            let value = Atomic(false)
        }
        let queue = OperationQueue()
        let secondStarted = Flag()
        let sawSecond = Shared(false)
        let firstRunning = BlockingSignal()
        queue.addOperation {
            firstRunning.open()
            // Computes (never blocks, never calls the kernel) until the second one has
            // started, or gives up after a generous CPU-time budget.
            let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(eventTimeout * 1e9)
            while DispatchTime.now().uptimeNanoseconds < deadline {
                if secondStarted.value.load(ordering: .acquiring) {
                    sawSecond.update { $0 = true }
                    return
                }
            }
        }
        #expect(firstRunning.wait())
        queue.addOperation { secondStarted.value.store(true, ordering: .releasing) }
        queue.waitUntilAllOperationsAreFinished()
        #expect(sawSecond())
    }

    /// The locks a worker may wait for: a Swift `Mutex` (the library's locks) and a glibc
    /// mutex (`NSLock`; `malloc`'s arena locks are of that kind).
    enum LockKind: CaseIterable, Sendable { case mutex, nsLock }

    /// A lock held by another thread until `unlock()`: a thread that takes it meanwhile
    /// sleeps in the kernel waiting for it.
    final class HeldLock: Sendable {
        private let mutex = Mutex(())
        private let nsLock = NSLock()
        private let kind: LockKind
        private let held = BlockingSignal(), release = BlockingSignal(), unlocked = BlockingSignal()

        init(_ kind: LockKind) {
            self.kind = kind
            onNewThread { [self] in
                withLock {
                    held.open()
                    release.wait()
                }
                unlocked.open()
            }
            held.wait()
        }

        private func withLock(_ body: () -> Void) {
            switch kind {
            case .mutex: mutex.withLock { _ in body() }
            case .nsLock: nsLock.withLock(body)
            }
        }

        func waitForIt() { withLock {} }

        func unlock() {
            release.open()
            unlocked.wait()
        }
    }

    /// Where a worker waits for the lock: after its first operation, or inside it.
    enum WaitPlace: Sendable { case betweenOperations, insideOperation }

    /// Where a worker's wait for a lock can be told from blocking: between operations
    /// everywhere, inside one only where threads can be read (elsewhere a worker inside an
    /// operation counts as blocked).
    static var waitPlaces: [WaitPlace] {
        #if os(Linux)
        [.betweenOperations, .insideOperation]
        #else
        [.betweenOperations]
        #endif
    }

    @Test("workers waiting for a lock, between operations or inside them, are not taken for blocked ones: the watchdog adds no worker",
          .enabled(if: WorkerPausePoints.arePassed), arguments: waitPlaces, LockKind.allCases)
    func workersWaitingForALock(place: WaitPlace, lock kind: LockKind) {
        // `8 × processors` operations on a default queue whose workers each take the lock
        // once, where `place` says; the watchdog's first four decisions after every worker
        // waits are looked at.
        let lock = HeldLock(kind)
        let queue = OperationQueue()
        queue.isSuspended = true
        let processors = ProcessInfo.processInfo.activeProcessorCount
        let waiting = Shared(0), allWaiting = BlockingSignal()
        let takeLock: @Sendable () -> Void = {
            if waiting.increment() == processors { allWaiting.open() }
            lock.waitForIt()
        }
        for _ in 0..<(8 * processors) {
            queue.addOperation {
                if place == .insideOperation { takeLock() }
            }
        }
        let taken = Shared(Set<ObjectIdentifier>())
        let pause = WorkerPausePoints.betweenOperations.add { worker, _ in
            guard place == .betweenOperations, worker === queue,
                  taken.update({ $0.insert(ObjectIdentifier(Thread.current)).inserted })
            else { return }
            takeLock()
        }
        let decisions = Shared<[Int]>([]), enoughDecisions = BlockingSignal()
        let watch = WorkerPausePoints.watchdogDecided.add { watched, started in
            guard watched === queue, waiting() >= processors else { return }
            if decisions.update({ $0.append(started); return $0.count }) == 4 { enoughDecisions.open() }
        }
        defer {
            WorkerPausePoints.betweenOperations.remove(pause)
            WorkerPausePoints.watchdogDecided.remove(watch)
        }
        queue.isSuspended = false
        #expect(allWaiting.wait())
        #expect(enoughDecisions.wait(), "the watchdog kept deciding while operations wait")
        let (seen, waited) = (decisions(), waiting())
        lock.unlock()
        queue.waitUntilAllOperationsAreFinished()
        #expect(seen.allSatisfy { $0 == 0 }, "workers started by the watchdog: \(seen)")
        #expect(waited == processors)
    }

    @Test("operations waiting for a lock whose holder waits for a later operation all run: lock waits count once nothing finishes",
          arguments: LockKind.allCases)
    func lockHolderWaitingForALaterOperation(lock kind: LockKind) {
        let queue = OperationQueue()
        let held = HeldLock(kind)
        let processors = ProcessInfo.processInfo.activeProcessorCount
        for _ in 0..<(4 * processors) { queue.addOperation { held.waitForIt() } }
        let laterRan = BlockingSignal()
        queue.addOperation {
            laterRan.open()
            held.unlock()
        }
        let ran = laterRan.wait()
        #expect(ran, "the operation that releases the lock never got a worker")
        if !ran { held.unlock() }
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("the workers added for blocked operations go while the queue keeps computing")
    func allowanceFallsBackWhileComputing() {
        let queue = OperationQueue()
        let processors = ProcessInfo.processInfo.activeProcessorCount
        let count = 4 * processors + 1
        let rendezvous = Rendezvous(count: count)
        let met = Shared(0)
        for _ in 0..<count {
            queue.addOperation {
                if rendezvous.arriveAndWait() { met.increment() }
            }
        }
        // Streams of CPU-bound operations, each adding the next when it ends, queued
        // behind the blocked ones, so that the workers never all end: only the watchdog's
        // looks, which find every worker computing, let the allowance fall back.
        let computing = Shared(true), measuring = Shared(false)
        let inFlight = Shared(0), mostWhileMeasured = Shared(0), measured = Shared(0)
        @Sendable func compute() {
            queue.addOperation {
                let now = inFlight.update { $0 += 1; return $0 }
                if measuring() { mostWhileMeasured.update { $0 = max($0, now) } }
                Self.burnCPU(nanoseconds: 4_000_000)
                inFlight.update { $0 -= 1 }
                if measuring() { measured.increment() }
                if computing() { compute() }
            }
        }
        for _ in 0..<count { compute() }
        #expect(eventually { met() == count }, "the blocked operations ran at once")
        #expect(eventually { queue._workerAllowanceAndCount.allowance <= processors }, "the allowance never fell back while the queue computed")
        // The workers beyond the allowance end with the operation they run.
        #expect(eventually { queue._workerAllowanceAndCount.running <= processors })
        measuring.update { $0 = true }
        #expect(eventually { measured() >= 16 })
        computing.update { $0 = false }
        queue.waitUntilAllOperationsAreFinished()
        #expect(mostWhileMeasured() <= 2 * processors, "\(mostWhileMeasured()) at once on \(processors) processors after the allowance fell back")
    }

    @Test("the workers added for blocked operations go once those ended, though an asynchronous operation still runs",
          .enabled(if: WorkerPausePoints.arePassed))
    func allowanceFallsBackOnceBlockedOperationsEnded() {
        let queue = OperationQueue()
        let processors = ProcessInfo.processInfo.activeProcessorCount
        let longRunning = TutorialAsyncOperation()
        queue.addOperation(longRunning)
        let count = 4 * processors + 1
        let rendezvous = Rendezvous(count: count)
        let met = Shared(0), ended = Shared(0)
        // Until the last worker has ended after the blocked operations did.
        let noWorker = BlockingSignal()
        let watch = WorkerPausePoints.workerEnded.add { worker, running in
            if worker === queue, running == 0, ended() == count { noWorker.open() }
        }
        defer { WorkerPausePoints.workerEnded.remove(watch) }
        for _ in 0..<count {
            queue.addOperation {
                if rendezvous.arriveAndWait() { met.increment() }
                ended.increment()
            }
        }
        #expect(noWorker.wait(), "the blocked operations ended")
        #expect(met() == count, "the blocked operations ran at once")
        let meter = Self.addCPUBoundOperations(burning: 4_000_000, to: queue)
        let computed = BlockOperation {}
        for operation in queue.operations where operation !== longRunning { computed.addDependency(operation) }
        queue.addOperation(computed)
        computed.waitUntilFinished()
        longRunning.finish()
        queue.waitUntilAllOperationsAreFinished()
        #expect(meter.most <= 2 * processors, "ran \(meter.most) at once on \(processors) processors")
    }

    @Test("operations that block overlap well beyond the processor count")
    func blocking() {
        let queue = OperationQueue()
        let count = 4 * ProcessInfo.processInfo.activeProcessorCount + 1
        let rendezvous = Rendezvous(count: count)
        let arrived = Shared(0)
        for _ in 0..<count {
            queue.addOperation {
                if rendezvous.arriveAndWait() { arrived.increment() }
            }
        }
        queue.waitUntilAllOperationsAreFinished()
        #expect(arrived() == count, "all \(count) blocked operations ran at once")
    }
}

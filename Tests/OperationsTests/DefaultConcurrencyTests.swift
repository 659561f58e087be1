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

    @Test("64 CPU-bound operations on a default queue run about one per processor")
    func cpuBound() {
        let queue = OperationQueue()
        let meter = ConcurrencyMeter()
        for _ in 0..<64 {
            queue.addOperation {
                meter.enter()
                Self.burnCPU(nanoseconds: 8_000_000)
                meter.leave()
            }
        }
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
        let firstRunning = Gate()
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

    @Test("workers waiting between operations are not taken for blocked ones: the watchdog adds no worker")
    func workersBetweenOperationsAreNotBlocked() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let processors = ProcessInfo.processInfo.activeProcessorCount
        for _ in 0..<(8 * processors) { queue.addOperation {} }
        // Each worker stops after its first operation, before it takes the queue's lock
        // again, as when another thread holds that lock: ready operations wait, nothing
        // finishes, and every worker sleeps outside any operation.
        let parked = Shared(0), released = Shared(false), release = Gate(), allParked = Gate()
        WorkerPausePoints.betweenOperations.set { worker, _ in
            guard worker === queue else { return }
            if parked.increment() == processors { allParked.open() }
            if !released() { release.wait() }
        }
        let decisions = Shared<[Int]>([]), enoughDecisions = Gate()
        WorkerPausePoints.watchdogDecided.set { watched, started in
            guard watched === queue, parked() >= processors else { return }
            if decisions.update({ $0.append(started); return $0.count }) == 4 { enoughDecisions.open() }
        }
        defer {
            WorkerPausePoints.betweenOperations.set(nil)
            WorkerPausePoints.watchdogDecided.set(nil)
        }
        queue.isSuspended = false
        #expect(allParked.wait())
        #expect(enoughDecisions.wait(), "the watchdog kept deciding while operations wait")
        #expect(decisions().allSatisfy { $0 == 0 }, "workers started by the watchdog: \(decisions())")
        #expect(parked() == processors)
        released.update { $0 = true }
        release.open(parked())
        queue.waitUntilAllOperationsAreFinished()
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

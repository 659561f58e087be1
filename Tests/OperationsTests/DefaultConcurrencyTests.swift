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

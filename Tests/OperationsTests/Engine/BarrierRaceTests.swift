import Operations
import OperationsComposition
import Testing

@Suite("Barriers added while other threads add")
struct BarrierRaceTests {
    @Test("A barrier held on its way in while another thread adds an operation and a second barrier: everything runs, barriers in order")
    func twoBarriersAndAnOperationAddedAtOnce() {
        let queue = OperationQueue()
        let holding = BlockingSignal(), release = BlockingSignal()
        // Holds the thread that adds the first barrier inside `addBarrierBlock`, where the
        // enqueue hooks run.
        let adderThread = Shared<ObjectIdentifier?>(nil)
        let subscription = queue.addEnqueueHook { _ in
            guard ObjectIdentifier(Thread.current) == adderThread() else { return }
            holding.open()
            release.wait()
        }
        let order = Shared<[String]>([])
        let firstAdded = BlockingSignal()
        let adder = Thread {
            adderThread.update { $0 = ObjectIdentifier(Thread.current) }
            queue.addBarrierBlock { order.append("barrier 1") }
            firstAdded.open()
        }
        adder.start()
        #expect(holding.wait())
        queue.addOperation { order.append("operation") }
        queue.addBarrierBlock { order.append("barrier 2") }
        release.open()
        #expect(firstAdded.wait())
        let finished = BlockingSignal()
        onNewThread {
            queue.waitUntilAllOperationsAreFinished()
            finished.open()
        }
        #expect(finished.wait())
        let seen = order()
        #expect(seen.count == 3)
        #expect(seen.firstIndex(of: "barrier 2")! > seen.firstIndex(of: "operation")!)
        subscription.cancel()
    }
}

import Operations
import OperationsComposition
import Testing

@Suite("Queue events")
struct EventTests {
    /// Collects the events of one queue.
    final class Recorder: Sendable {
        let events = Shared<[OperationEvent]>([])

        /// A recorder of `queue`'s events, for as long as the subscription lasts.
        static func recording(_ queue: OperationQueue) -> (Recorder, OperationEventSubscription) {
            let recorder = Recorder()
            let subscription = queue.addEventHandler { event in recorder.events.update { $0.append(event) } }
            return (recorder, subscription)
        }

        func kinds(of operation: Operation) -> [OperationEvent.Kind] {
            events().filter { $0.operation === operation }.map(\.kind)
        }
    }

    @Test("enqueued, started and finished, in order, with times, threads and slots")
    func lifecycle() {
        let queue = OperationQueue()
        let (recorder, subscription) = Recorder.recording(queue)
        let operation = BlockOperation {}
        queue.addOperation(operation)
        queue.waitUntilAllOperationsAreFinished()
        #expect(recorder.kinds(of: operation) == [.enqueued, .started, .finished(wasCancelled: false)])
        let events = recorder.events().filter { $0.operation === operation }
        #expect(events.map(\.time) == events.map(\.time).sorted())
        #expect(events.allSatisfy { $0.queue === queue })
        #expect(events[1].slot != nil && events[1].slot! < 64)
        #expect(events[1].thread == events[2].thread, "finished on the thread that ran it")
        subscription.cancel()
    }

    @Test("cancelled operations report the cancellation and finish cancelled, without starting work")
    func cancellation() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let (recorder, subscription) = Recorder.recording(queue)
        let operation = BlockOperation {}
        queue.addOperation(operation)
        queue.cancelAllOperations()
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(recorder.kinds(of: operation) == [.enqueued, .cancelled, .started, .finished(wasCancelled: true)])
        _ = subscription
    }

    @Test("a cancelled subscription hears nothing more")
    func unsubscribe() {
        let queue = OperationQueue()
        let (recorder, subscription) = Recorder.recording(queue)
        subscription.cancel()
        queue.addOperation {}
        queue.waitUntilAllOperationsAreFinished()
        #expect(recorder.events().isEmpty)
    }

    @Test("a subscription cancelled while another handler runs is not called by that delivery")
    func cancelledDuringDelivery() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let first = Shared(0)
        let entered = BlockingSignal(), release = BlockingSignal()
        // The first handler holds the delivery of the first event inside its call.
        let holding = queue.addEventHandler { _ in
            if first.update({ $0 += 1; return $0 }) == 1 {
                entered.open()
                release.wait()
            }
        }
        let recorder = Recorder()
        let cancelled = Shared(false)
        let calledAfterCancel = Shared(false)
        let second = queue.addEventHandler { event in
            if cancelled() { calledAfterCancel.update { $0 = true } }
            recorder.events.update { $0.append(event) }
        }
        let held = addWhileHeld(to: queue, entered: entered, release: release) {
            second.cancel()
            cancelled.update { $0 = true }
        }
        #expect(held.entered)
        #expect(held.added)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(!calledAfterCancel(), "called after its subscription was cancelled")
        #expect(recorder.events().isEmpty)
        holding.cancel()
    }

    /// Reads `isReady` once through a hold: the first read opens `reading` and waits for
    /// `release` (an add reads it before taking the queue's lock).
    final class HeldReading: Operation, @unchecked Sendable {
        let reading = BlockingSignal()
        let release = BlockingSignal()
        private let first = Shared(true)

        override var isReady: Bool {
            let isFirst = first.update { first in
                defer { first = false }
                return first
            }
            if isFirst {
                reading.open()
                release.wait()
            }
            return super.isReady
        }
    }

    @Test("an operation's enqueued event comes when it joins: after a barrier added while its add read isReady")
    func enqueuedWhenJoined() {
        let queue = OperationQueue()
        let (recorder, subscription) = Recorder.recording(queue)
        let late = HeldReading()
        let added = BlockingSignal()
        onNewThread {
            queue.addOperation(late)
            added.open()
        }
        #expect(late.reading.wait())
        // Joins while the first add is still reading: it does not wait for `late`.
        let barrierRan = BlockingSignal()
        queue.addBarrierBlock { barrierRan.open() }
        #expect(barrierRan.wait())
        late.release.open()
        #expect(added.wait())
        queue.waitUntilAllOperationsAreFinished()
        let enqueued = recorder.events().filter { $0.kind == .enqueued }
        #expect(enqueued.count == 2)
        #expect(enqueued.last?.operation === late, "the barrier joined first: \(enqueued.map { $0.operation.name ?? "\($0.operation)" })")
        #expect(recorder.kinds(of: late) == [.enqueued, .started, .finished(wasCancelled: false)])
        subscription.cancel()
    }

    @Test("concurrent operations of a limit-2 queue use two slots")
    func slots() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        let (recorder, subscription) = Recorder.recording(queue)
        let rendezvous = Rendezvous(count: 2)
        for _ in 0..<2 { queue.addOperation { rendezvous.arriveAndWait() } }
        queue.waitUntilAllOperationsAreFinished()
        let slots = Set(recorder.events().compactMap(\.slot))
        #expect(slots.count == 2)
        _ = subscription
    }

    /// An operation that runs and finishes before `addOperation` returns still has its
    /// `.enqueued` event first, never [started, finished, enqueued]. Forced: a serial queue
    /// runs `first`, which waits on a gate, so its worker is busy. An observer of the
    /// queue's `operationCount` fires on the adding thread once `second` is in the queue
    /// (after the queue's lock, before `addOperation` returns): it releases `first` and
    /// waits for `second` to run on the same worker (bounded: the queue may hold `second`
    /// back until its `.enqueued` event is out).
    @Test("per operation, .enqueued comes before .started and .finished")
    func enqueuedComesFirst() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let (recorder, subscription) = Recorder.recording(queue)
        let firstStarted = BlockingSignal(), releaseFirst = BlockingSignal()
        queue.addOperation {
            firstStarted.open()
            releaseFirst.wait()
        }
        #expect(firstStarted.wait())
        let secondRan = BlockingSignal()
        let second = BlockOperation { secondRan.open() }
        let armed = Shared(false)
        let observer = CallbackObserver { _, change in
            guard !change.isPrior, takeOnce(armed) else { return }
            releaseFirst.open()
            _ = secondRan.wait(timeout: 5)
        }
        queue.addObserver(observer, forKeyPath: "operationCount", options: [.new], context: nil)
        armed.update { $0 = true }
        queue.addOperation(second)
        queue.waitUntilAllOperationsAreFinished()
        queue.removeObserver(observer, forKeyPath: "operationCount")
        #expect(!armed(), "the hook did not fire")
        #expect(recorder.kinds(of: second) == [.enqueued, .started, .finished(wasCancelled: false)])
        subscription.cancel()
    }
}

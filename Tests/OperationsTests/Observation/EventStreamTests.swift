import Operations
import OperationsComposition
import Testing

@Suite("Events as an AsyncSequence")
struct EventStreamTests {
    @Test("a queue's events arrive in order, with consecutive sequence numbers")
    func inOrder() async {
        let queue = OperationQueue()
        queue.isSuspended = true
        var iterator = queue.events().makeAsyncIterator()
        let operations = (0..<3).map { index in BlockOperation {} .named("op \(index)") }
        queue.addOperations(operations, waitUntilFinished: false)
        queue.isSuspended = false
        var received: [OperationEventStream.Element] = []
        while received.filter({ if case .finished = $0.event.kind { true } else { false } }).count < 3 {
            guard let element = await iterator.next() else { break }
            received.append(element)
        }
        #expect(received.count == 9)
        #expect(received.allSatisfy { $0.droppedBefore == 0 })
        let sequences = received.map(\.event.sequence)
        #expect(sequences == Array(sequences.first!..<sequences.first! + 9))
        #expect(received.prefix(3).map(\.event.kind) == [.enqueued, .enqueued, .enqueued])
        for operation in operations {
            let kinds = received.filter { $0.event.operation === operation }.map(\.event.kind)
            #expect(kinds == [.enqueued, .started, .finished(wasCancelled: false)])
        }
    }

    @Test("a consumer that does not read never stalls the queue; the oldest events are dropped and counted")
    func slowConsumerDropsOldest() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        var iterator = queue.events(bufferingNewest: 4).makeAsyncIterator()
        let operations = (0..<20).map { _ in BlockOperation {} }
        queue.addOperations(operations, waitUntilFinished: false)
        // Nobody reads while the queue runs all 20 (60 events).
        await queue.waitUntilAllOperationsAreFinished()
        var received: [OperationEventStream.Element] = []
        for _ in 0..<4 {
            guard let element = await iterator.next() else { break }
            received.append(element)
        }
        #expect(received.count == 4)
        #expect(received.first?.droppedBefore == 56)
        #expect(received.dropFirst().allSatisfy { $0.droppedBefore == 0 })
        #expect(received.last?.event.operation === operations.last)
        #expect(received.last?.event.kind == .finished(wasCancelled: false))
        let sequences = received.map(\.event.sequence)
        #expect(sequences == Array(sequences.first!..<sequences.first! + 4))
    }

    @Test("one operation's stream ends after its finished event")
    func operationStream() async {
        let queue = OperationQueue()
        queue.isSuspended = true
        let other = BlockOperation {}
        let operation = BlockOperation {}
        // Made here (recording starts), consumed by the task.
        let recording = queue.events(of: operation).makeAsyncIterator()
        let collector = Task {
            var iterator = recording
            var kinds: [OperationEvent.Kind] = []
            while let element = await iterator.next() { kinds.append(element.event.kind) }
            return kinds
        }
        queue.addOperations([other, operation], waitUntilFinished: false)
        operation.cancel()
        queue.isSuspended = false
        let kinds = await collector.value
        #expect(kinds == [.enqueued, .cancelled, .started, .finished(wasCancelled: true)], "\(kinds)")
    }

    @Test("the stream of an operation that has finished ends at once")
    func finishedOperationStream() async {
        let queue = OperationQueue()
        let operation = BlockOperation {}
        queue.addOperations([operation], waitUntilFinished: true)
        var count = 0
        for await _ in queue.events(of: operation) { count += 1 }
        #expect(count == 0)
    }

    @Test("cancelling the consuming task ends the stream")
    func cancellation() async {
        let queue = OperationQueue()
        let recording = queue.events().makeAsyncIterator()
        let consumer = Task {
            var iterator = recording
            return await iterator.next()
        }
        consumer.cancel()
        #expect(await consumer.value == nil)
    }

    @Test("events keep flowing to a second iteration after the first is released")
    func releasedIterator() async {
        let queue = OperationQueue()
        do {
            _ = queue.events().makeAsyncIterator()
        }
        var iterator = queue.events().makeAsyncIterator()
        queue.addOperation(BlockOperation {})
        let first = await iterator.next()
        #expect(first?.event.kind == .enqueued)
        #expect(first?.droppedBefore == 0)
    }
}

@Suite("Enqueue hooks")
struct EnqueueHookTests {
    @Test("a hook runs on the adding thread, before the enqueued event, until cancelled")
    func enqueueHook() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let seen = Shared<[String]>([])
        let adder = pthread_self()
        let threads = Shared<[Bool]>([])
        let hook = queue.addEnqueueHook { operation in
            seen.append("hook \(operation.name ?? "?")")
            threads.update { $0.append(pthread_equal(pthread_self(), adder) != 0) }
        }
        let events = queue.addEventHandler { event in
            if event.kind == .enqueued { seen.append("event \(event.operation.name ?? "?")") }
        }
        queue.addOperation(BlockOperation {}.named("first"))
        hook.cancel()
        queue.addOperation(BlockOperation {}.named("second"))
        #expect(seen() == ["hook first", "event first", "event second"])
        #expect(threads() == [true])
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        events.cancel()
    }

    @Test("a hook cancelled while an earlier hook runs is not called for that add")
    func cancelledWhileAnotherRuns() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let entered = BlockingSignal(), release = BlockingSignal()
        let holding = queue.addEnqueueHook { _ in
            entered.open()
            release.wait()
        }
        let calls = Shared(0)
        let second = queue.addEnqueueHook { _ in calls.update { $0 += 1 } }
        let held = addWhileHeld(to: queue, entered: entered, release: release) { second.cancel() }
        #expect(held.entered)
        #expect(held.added)
        #expect(calls() == 0, "called after its subscription was cancelled")
        holding.cancel()
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
    }
}

import Operations
import OperationsComposition
import Testing

/// A queue subclass as frameworks write one: it sees every operation that passes through
/// `addOperation(_:)` (to log it, count it, or wire its conditions).
final class RecordingQueue: OperationQueue, @unchecked Sendable {
    let seen = Shared<[Operation]>([])

    override func addOperation(_ operation: Operation) {
        seen.update { $0.append(operation) }
        super.addOperation(operation)
    }
}

@Suite("OperationQueue subclasses: what goes through an overridden addOperation(_:)")
struct QueueSubclassTests {
    @Test("addOperation(_ block:) wraps the block in a BlockOperation and adds it through addOperation(_:)")
    func blockGoesThroughAddOperation() {
        let queue = RecordingQueue()
        let ran = Shared(false)
        queue.addOperation { ran.update { $0 = true } }
        queue.waitUntilAllOperationsAreFinished()
        #expect(ran())
        let seen = queue.seen()
        #expect(seen.count == 1)
        #expect(seen.first is BlockOperation)
        #expect(seen.first?.isFinished == true)
    }

    @Test("addOperations(_:waitUntilFinished:) and addBarrierBlock(_:) do not go through addOperation(_:), as in Foundation")
    func batchAndBarrierDoNotGoThroughAddOperation() {
        let queue = RecordingQueue()
        let ran = Shared(0)
        queue.addOperations([BlockOperation { ran.increment() }, BlockOperation { ran.increment() }], waitUntilFinished: true)
        queue.addBarrierBlock { ran.increment() }
        queue.waitUntilAllOperationsAreFinished()
        #expect(ran() == 3)
        #expect(queue.seen().isEmpty)
    }

    @Test("An async body added to a queue subclass goes through addOperation(_:)")
    func asyncBodyGoesThroughAddOperation() async throws {
        let queue = RecordingQueue()
        let operation = queue.addOperation { () async -> Int in 42 }
        #expect(try await operation.value == 42)
        #expect(queue.seen().count == 1)
        #expect(queue.seen().first === operation)
    }

    @Test("Enqueue hooks see every operation once, however it was added: blocks, async bodies, enqueue, batches, barriers")
    func enqueueHooksSeeMadeOperations() async throws {
        let queue = OperationQueue()
        let hooked = Shared(0)
        let subscription = queue.addEnqueueHook { _ in hooked.increment() }
        queue.addOperation {}
        let operation = queue.addOperation { () async -> Int in 1 }
        _ = try await operation.value
        let enqueued = try await queue.enqueue { () async -> Int in 2 }
        _ = try await enqueued.value
        queue.addOperations([BlockOperation {}, BlockOperation {}], waitUntilFinished: false)
        queue.addOperation(BlockOperation {})
        queue.addBarrierBlock {}
        await queue.waitUntilAllOperationsAreFinished()
        #expect(hooked() == 7)
        subscription.cancel()
    }
}

/// A framework's queue class that has a main queue of its own, as ProcedureKit's does.
final class FrameworkMainQueue: OperationQueue, @unchecked Sendable {
    static let frameworkMain = FrameworkMainQueue()
    override class var main: FrameworkMainQueue { frameworkMain }
    override class var current: OperationQueue? { super.current }
}

@Suite("OperationQueue's class properties")
struct QueueClassPropertyTests {
    @Test("main and current are class properties a subclass may override; OperationQueue.main stays the main queue")
    func mainAndCurrentAreOverridable() {
        #expect(FrameworkMainQueue.main === FrameworkMainQueue.frameworkMain)
        #expect(OperationQueue.main !== FrameworkMainQueue.frameworkMain)
        #expect(OperationQueue.main.maxConcurrentOperationCount == 1)
        let queue = OperationQueue()
        let seen = Shared<OperationQueue?>(nil)
        queue.addOperation { seen.update { $0 = FrameworkMainQueue.current } }
        queue.waitUntilAllOperationsAreFinished()
        #expect(seen() === queue)
    }
}

import Operations
import OperationsComposition
import Testing

// Frameworks built on Foundation's classes declare members of their own in their
// subclasses. Foundation has none of the members this library adds, so every one of them
// must leave the name free: a subclass may declare a member of the same name (and the same
// signature) without `override`, and its own member is the one its code calls.
//
// This file compiling is most of the test. The subclasses below declare the names that
// frameworks built on Operation declare (PSOperations, ProcedureKit, the asynchronous
// operation of the tutorials), and every member this library adds, with its signature.

private struct Reason: Error, Equatable {
    var text = "reason"
}

/// The members of PSOperations' operation, queue and group.
private class PSOperationsStyleOperation: Operation, @unchecked Sendable {
    private(set) var conditionNames: [String] = []
    private(set) var observerCount = 0
    private(set) var produced: [Operation] = []
    private(set) var finishedErrors: [any Error]?

    func addCondition(_ condition: some OperationCondition) { conditionNames.append(condition.name) }
    func addObserver(_ observer: some OperationObserver) { observerCount += 1 }
    final func produceOperation(_ operation: Operation) { produced.append(operation) }
    func execute() { finish() }
    var errors: [any Error] = []
    var userInitiated = false
    func didEnqueue() {}
    func cancelWithError(_ error: any Error) { cancelWithErrors([error]) }
    func cancelWithErrors(_ errors: [any Error]) {
        self.errors += errors
        cancel()
    }
    final func finishWithError(_ error: (any Error)?) { finish(error.map { [$0] } ?? []) }
    final func finish(_ errors: [any Error] = []) {
        finishedErrors = errors
        finished(errors)
    }
    func finished(_ errors: [any Error]) {}
    func aggregateError(_ error: any Error) { errors.append(error) }
    func operationDidFinish(_ operation: Operation, withErrors errors: [any Error]) {}
}

/// The members of ProcedureKit's `Procedure`.
private class ProcedureStyleOperation: Operation, @unchecked Sendable {
    enum Status { case pending, executing, finished }
    enum UserIntent { case none, sideEffect, initiated }

    private(set) var cancelReasons: [(any Error)?] = []
    var userIntent = UserIntent.none
    var status = Status.pending
    var error: (any Error)?
    var log: [String] = []
    var conditions: [String] = []
    var isEnqueued = false
    var isPending = true

    open func cancel(with error: (any Error)?) { cancelReasons.append(error) }
    func cancel(withErrors errors: [any Error]) { cancel(with: errors.first) }
    func willEnqueue(on queue: OperationQueue) { isEnqueued = true }
    func pendingQueueStart() { isPending = false }
    open func execute() { finish(with: nil) }
    func produce(operation: Operation, before event: String? = nil) throws {}
    func procedureDidCancel(with error: (any Error)?) {}
    func procedureWillFinish(with error: (any Error)?) {}
    func procedureDidFinish(with error: (any Error)?) {}
    func finish(with error: (any Error)? = nil) { self.error = error }
    func finish(withErrors errors: [any Error]) { finish(with: errors.first) }
    func addObserver(_ observer: some OperationObserver) {}
    func addCondition(_ condition: some OperationCondition) { conditions.append(condition.name) }
    func add(observer: some OperationObserver) {}
    func add(dependency: Operation) { addDependency(dependency) }
    func add(condition: some OperationCondition) {}
}

/// A user's subclass of the framework's class overrides the framework's members.
private final class ProcedureSubclass: ProcedureStyleOperation, @unchecked Sendable {
    private(set) var overrideCalls = 0

    override func cancel(with error: (any Error)?) {
        overrideCalls += 1
        super.cancel(with: error)
    }
}

/// The asynchronous operation of the tutorials (its `state` enum and `finish()` are the
/// helpers' `TutorialAsyncOperation`'s), with the `error` some of them add.
private final class TutorialStyleAsyncOperation: TutorialAsyncOperation, @unchecked Sendable {
    var error: (any Error)?

    override func main() { finish() }
}

/// Every member this library adds to `Operation`, declared again with its signature.
private final class ShadowingOperation: Operation, @unchecked Sendable {
    enum Outcome { case mine }
    enum WaitReason { case mine }

    static var trapsOnDependencyCycles: Bool { true }
    private(set) var calls: [String] = []
    var outcome: Operation.Outcome? { .succeeded }
    var waitReasons: [Operation.WaitReason] { [] }
    var waitDescription: String { "mine" }

    func cancel(with reason: (any Error)?) { calls.append("cancel(with:)") }
    func waitUntilFinished() async { calls.append("waitUntilFinished() async") }
    func addCondition(_ condition: some OperationCondition) { calls.append("addCondition(_:)") }
    func addObserver(_ observer: some OperationObserver) { calls.append("addObserver(_:)") }
    func addExclusivity(_ category: String, mode: ExclusivityMode = .exclusive) { calls.append("addExclusivity(_:mode:)") }
    func produceOperation(_ operation: Operation) { calls.append("produceOperation(_:)") }
    func timeout<C: Clock>(after duration: C.Duration, clock: C) { calls.append("timeout(after:clock:)") }
    func timeout(after duration: Duration) { calls.append("timeout(after:)") }
}

/// The same names on a `BlockOperation`.
private final class ShadowingBlockOperation: BlockOperation, @unchecked Sendable {
    private(set) var calls: [String] = []
    var errors: [any Error] = []
    var outcome: Operation.Outcome? { .succeeded }

    func cancel(with reason: (any Error)?) { calls.append("cancel(with:)") }
    func produceOperation(_ operation: Operation) { calls.append("produceOperation(_:)") }
    func finish() { calls.append("finish()") }
    func addCondition(_ condition: some OperationCondition) { calls.append("addCondition(_:)") }
}

/// The members of PSOperations' and ProcedureKit's queues.
private protocol FrameworkQueueDelegate: AnyObject {}

private final class FrameworkStyleQueue: OperationQueue, @unchecked Sendable {
    private static let shared = FrameworkStyleQueue()

    weak var delegate: (any FrameworkQueueDelegate)?
    private(set) var added: [Operation] = []

    override class var main: FrameworkStyleQueue { shared }

    override func addOperation(_ operation: Operation) {
        added.append(operation)
        super.addOperation(operation)
    }

    override func addOperations(_ operations: [Operation], waitUntilFinished wait: Bool) {
        added += operations
        super.addOperations(operations, waitUntilFinished: wait)
    }

    @discardableResult
    func addOperation(_ operation: Operation, withContext context: Any?) -> Bool {
        addOperation(operation)
        return true
    }

    func add(operation: Operation) { addOperation(operation) }
}

/// Every member this library adds to `OperationQueue`, declared again with its signature.
private final class ShadowingQueue: OperationQueue, @unchecked Sendable {
    struct PendingOperation {}

    private(set) var calls: [String] = []
    var capacity: Int? = 7
    var pendingOperations: [OperationQueue.PendingOperation] { [] }
    var waitDescription: String { "mine" }

    func waitUntilAllOperationsAreFinished() async { calls.append("waitUntilAllOperationsAreFinished() async") }

    @discardableResult
    func addOperation<Success: Sendable>(
        _ body: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> AsyncBlockOperation<Success> {
        calls.append("addOperation(_:) async body")
        return AsyncBlockOperation(body)
    }

    func perform<Success: Sendable>(_ operation: ValueOperation<Success>) async throws -> Success {
        throw Reason()
    }

    func perform<Success: Sendable>(
        _ body: @escaping @Sendable @isolated(any) () async throws -> Success
    ) async throws -> Success {
        throw Reason()
    }

    @discardableResult
    func enqueue<Added: Operation>(_ operation: Added) async throws -> Added { operation }

    @discardableResult
    func enqueue<Success: Sendable>(
        _ body: @escaping @Sendable @isolated(any) () async throws -> Success
    ) async throws -> AsyncBlockOperation<Success> {
        AsyncBlockOperation(body)
    }

    func results<Success: Sendable>(adding operations: [ValueOperation<Success>]) -> OperationResults<Success> {
        fatalError("declared only")
    }

    func addTaskScope(
        _ scope: @escaping @Sendable (Operation, () async -> Void) async -> Void
    ) -> OperationEventSubscription {
        fatalError("declared only")
    }

    @discardableResult
    func addOperation<Success: Sendable>(
        forKey key: some Hashable & Sendable, _ make: () -> ValueOperation<Success>
    ) -> ValueOperation<Success> {
        make()
    }

    @discardableResult
    func addOperation(forKey key: some Hashable & Sendable, _ make: () -> Operation) -> Operation { make() }

    func perform<Success: Sendable>(
        forKey key: some Hashable & Sendable,
        _ body: @escaping @Sendable @isolated(any) () async throws -> Success
    ) async throws -> Success {
        throw Reason()
    }

    func operation(forKey key: some Hashable & Sendable) -> Operation? { nil }

    @discardableResult
    func cancelOperation(forKey key: some Hashable & Sendable) -> Bool {
        calls.append("cancelOperation(forKey:)")
        return false
    }

    func setQueuePriority(_ priority: Operation.QueuePriority, forKey key: some Hashable & Sendable) {}

    func addEnqueueHook(_ hook: @escaping @Sendable (Operation) -> Void) -> OperationEventSubscription {
        fatalError("declared only")
    }

    func events(bufferingNewest limit: Int = 1024) -> OperationEventStream { fatalError("declared only") }

    func events(of operation: Operation, bufferingNewest limit: Int = 16) -> OperationEventStream {
        fatalError("declared only")
    }

    func addEventHandler(_ handler: @escaping @Sendable (OperationEvent) -> Void) -> OperationEventSubscription {
        fatalError("declared only")
    }
}

@Suite("Names a subclass may declare")
struct FrameworkNamesCompileTests {
    @Test("a subclass's cancel(with:) runs through the subclass; the library's through Operation")
    func cancelWithReason() {
        let operation = ProcedureStyleOperation()
        operation.cancel(with: Reason())
        #expect(operation.cancelReasons.count == 1)
        #expect(!operation.isCancelled)

        let base: Operation = operation
        base.cancel(with: Reason(text: "through Operation"))
        #expect(operation.isCancelled)
        #expect(operation.cancelReasons.count == 1)
        operation.start()
        #expect(base.outcome?.error as? Reason == Reason(text: "through Operation"))

        let subclass = ProcedureSubclass()
        subclass.cancel(with: nil)
        #expect(subclass.overrideCalls == 1 && subclass.cancelReasons.count == 1)
        #expect(!subclass.isCancelled)
    }

    @Test("a subclass's produceOperation(_:) runs through the subclass; the library's through Operation")
    func produceOperation() {
        let producer = PSOperationsStyleOperation()
        let queue = suspendedQueue(holding: producer)
        let mine = BlockOperation {}
        producer.produceOperation(mine)
        #expect(producer.produced.count == 1)
        #expect(queue.operationCount == 1)

        let base: Operation = producer
        base.produceOperation(BlockOperation {})
        #expect(producer.produced.count == 1)
        #expect(queue.operationCount == 2)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("a subclass's properties of the library's names are its own")
    func properties() {
        let operation = ShadowingOperation()
        #expect(operation.outcome?.isSucceeded == true)
        #expect((operation as Operation).outcome == nil)
        #expect(operation.waitDescription == "mine")
        #expect((operation as Operation).waitDescription != "mine")
        #expect(ShadowingOperation.trapsOnDependencyCycles)

        let block = ShadowingBlockOperation {}
        block.cancel(with: Reason())
        #expect(block.calls == ["cancel(with:)"])
        #expect(!block.isCancelled)

        let queue = ShadowingQueue()
        #expect(queue.capacity == 7)
        #expect((queue as OperationQueue).capacity == nil)
        #expect(queue.cancelOperation(forKey: "key") == false)
        #expect(queue.calls == ["cancelOperation(forKey:)"])
    }

    @Test("a subclass's async members run in async contexts through the subclass")
    func asyncMembers() async {
        let operation = ShadowingOperation()
        await operation.waitUntilFinished()
        #expect(operation.calls == ["waitUntilFinished() async"])
        let queue = ShadowingQueue()
        await queue.waitUntilAllOperationsAreFinished()
        #expect(queue.calls == ["waitUntilAllOperationsAreFinished() async"])
    }

    @Test("a framework queue overriding main, addOperation and addOperations runs its operations")
    func frameworkQueue() {
        #expect(FrameworkStyleQueue.main !== OperationQueue.main)
        let queue = FrameworkStyleQueue()
        let first = TutorialStyleAsyncOperation()
        let second = BlockOperation {}
        queue.addOperation(first, withContext: nil)
        queue.addOperations([second], waitUntilFinished: true)
        queue.waitUntilAllOperationsAreFinished()
        #expect(queue.added.count == 2)
        #expect(first.isFinished && first.state == .finished)
        #expect(second.isFinished)
    }
}

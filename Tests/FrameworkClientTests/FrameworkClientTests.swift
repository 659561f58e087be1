import FrameworkOnOperations
import Operations
import Testing

/// A client of a framework built on `Operations` that declares composition types of its own
/// (as PSOperations and ProcedureKit do): with `import Operations` beside it, every one of
/// those names means the framework's type. (`Operations` declares none of them; they live in
/// `OperationsComposition`.) The test is that this file compiles; the checks use each type.
@Suite("A framework's own composition names beside import Operations")
struct FrameworkClientTests {
    @Test("the framework's types are used by their plain names")
    func frameworkNamesAreUnambiguous() {
        let conditions: [any OperationCondition] = [
            BlockCondition(), NegatedCondition(condition: BlockCondition()),
            SilentCondition(condition: NoFailedDependenciesCondition()), NoFailedDependenciesCondition(),
        ]
        let observers: [any OperationObserver] = [BlockObserver(), TimeoutObserver(timeout: 1)]
        let group: GroupOperation = GroupOperation()
        let delay: DelayOperation = DelayOperation(delay: 0)
        let retry: RetryOperation = RetryOperation(attempts: 2)
        let operations: [Operation] = [group, delay, retry]
        #expect(conditions.count == 4 && observers.count == 2 && operations.count == 3)
        #expect(type(of: conditions[1]).name == "Not<Block>")
        #expect(retry.attempts == 2 && delay.delay == 0)
        let queue = OperationQueue()
        queue.addOperations(operations, waitUntilFinished: true)
        #expect(operations.allSatisfy { $0.isFinished })
    }
}

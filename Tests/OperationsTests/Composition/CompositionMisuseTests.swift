import Operations
import OperationsComposition
import Testing
import TestTraits

/// Misuse of the composition layer stops with a message naming the operation and the rule.
@Suite("Composition misuse")
struct CompositionMisuseTests {
    @Test("adding a category to an operation in a queue", .oneExitTestAtATime)
    func exclusivityLate() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = Operation().named("late writer")
            withExtendedLifetime(suspendedQueue(holding: operation)) { operation.addExclusivity("database") }
        }.map { $0.standardErrorContent.containsText("\"late writer\"", "addExclusivity", "before adding it to a queue") }.check()
    }

    @Test("starting by hand an operation with conditions", .oneExitTestAtATime)
    func startConditionedByHand() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = BlockOperation {}.named("guarded")
            operation.addCondition(NoFailedDependenciesCondition())
            operation.start()
        }.map { $0.standardErrorContent.containsText("\"guarded\"", "not ready", "evaluated on its queue") }.check()
    }

    @Test("producing from an operation in no queue", .oneExitTestAtATime)
    func produceWithoutQueue() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = Operation().named("loner")
            operation.produceOperation(Operation())
        }.map { $0.standardErrorContent.containsText("\"loner\"", "in no queue") }.check()
    }

    @Test("a negative child weight", .oneExitTestAtATime)
    func negativeWeight() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let group = GroupOperation()
            group.name = "weighed"
            group.addChild(Operation(), weight: -1)
        }.map { $0.standardErrorContent.containsText("\"weighed\"", "at least 0") }.check()
    }
}

@Suite("Observers beside key-value observing")
struct ObserversBesideKVOTests {
    @Test("key-value observing of isFinished keeps working with a lifecycle observer attached")
    func both() {
        let operation = BlockOperation {}
        let kvo = Shared(0)
        let lifecycle = Shared(0)
        let token = operation.observe(\.isFinished, options: [.new]) { _, change in
            if change.newValue == true { kvo.increment() }
        }
        operation.addObserver(BlockObserver(didFinish: { _, _ in lifecycle.increment() }))
        OperationQueue().addOperation(operation)
        operation.waitUntilFinished()
        #expect(eventually { kvo() == 1 && lifecycle() == 1 })
        token.invalidate()
    }
}

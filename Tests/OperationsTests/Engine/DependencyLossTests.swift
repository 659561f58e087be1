@testable import Operations
import OperationsComposition
import Testing

/// What a finishing dependency's count-out decides, in one lock section of the dependent:
/// whether the dependent's gates are consulted before its readiness is checked.
@Suite("Dependency loss: the decision made under the dependent's lock")
struct DependencyLossTests {
    @Test("a dependent with gates asks for them to be consulted, read in the same section that counts the dependency out")
    func gatedDependentAsksForItsGates() {
        let dependency = BlockOperation {}
        let dependent = BlockOperation {}
        dependent.addDependency(dependency)
        // Added while the dependent is in no queue, as a thread racing the dependency's
        // finish could: the count-out must see it, whatever the dependent's flags said before.
        dependent.addCondition(BlockCondition { _ in true })
        let followUp = dependent._update { $0.loseDependencyTriggeringReadiness() }
        guard case .consultGates = followUp else {
            Issue.record("the count-out of a gated dependent returned \(followUp) instead of consulting its gates")
            return
        }
    }

    @Test("a dependent without gates runs its readiness trigger in the same section")
    func ungatedDependentTriggersReadiness() {
        let dependency = BlockOperation {}
        let dependent = BlockOperation {}
        dependent.addDependency(dependency)
        let followUp = dependent._update { $0.loseDependencyTriggeringReadiness() }
        guard case .check = followUp else {
            Issue.record("the count-out of an ungated dependent returned \(followUp) instead of its readiness trigger")
            return
        }
        #expect(dependent._update { $0.pendingDependencyCount } == 0)
    }

    @Test("a dependent given a condition and queued before its dependency finishes is consulted and runs")
    func conditionAddedBeforeTheDependencyFinishesIsConsulted() {
        let consulted = Shared(false)
        let ran = BlockingSignal()
        let dependencyQueue = OperationQueue()
        let dependentQueue = OperationQueue()
        dependencyQueue.isSuspended = true
        let dependency = BlockOperation {}
        let dependent = BlockOperation { ran.open() }
        dependent.addDependency(dependency)
        dependencyQueue.addOperation(dependency)
        dependent.addCondition(BlockCondition { _ in consulted.update { $0 = true }; return true })
        dependentQueue.addOperation(dependent)
        dependencyQueue.isSuspended = false
        // A bounded wait: a condition left unconsulted would keep the dependent waiting for good.
        #expect(ran.wait(), "the dependent ran")
        #expect(consulted())
    }
}

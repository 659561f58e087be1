import Operations
import OperationsComposition
import Testing

/// An operation written as PSOperations and the "Advanced NSOperations" sample write it: one
/// `state` enum, only `"state"` announced, and `isReady`/`isExecuting`/`isFinished` declared
/// dependent on it through `keyPathsForValuesAffectingValue(forKey:)`.
class StateEnumOperation: OwnStateOperation<StateEnumOperation.State>, @unchecked Sendable {
    enum State: Int { case pending, ready, executing, finished }

    let body: @Sendable (StateEnumOperation) -> Void

    init(_ body: @escaping @Sendable (StateEnumOperation) -> Void = { $0.finish() }) {
        self.body = body
        super.init(state: .pending)
    }

    override class var keysDependingOnState: Set<String> { ["isReady", "isExecuting", "isFinished"] }

    /// Ready once its conditions were evaluated (`state` moved to `.ready`) and its
    /// dependencies finished.
    override var isReady: Bool {
        switch state {
        case .pending: isCancelled
        case .ready: super.isReady || isCancelled
        case .executing, .finished: false
        }
    }
    override var isExecuting: Bool { state == .executing }
    override var isFinished: Bool { state == .finished }
    override var isAsynchronous: Bool { true }

    /// What the sample's condition evaluation does when it completes.
    func conditionsEvaluated() { state = .ready }

    override func start() {
        if isCancelled {
            state = .finished
            return
        }
        state = .executing
        body(self)
    }

    func finish() { state = .finished }
}

@Suite("Dependent keys: keyPathsForValuesAffectingValue(forKey:)")
struct DependentKeyTests {
    @Test("a PSOperations-style operation that announces only \"state\" runs in a queue and releases its dependent")
    func stateOnlyOperationInQueue() {
        let queue = OperationQueue()
        let first = BlockOperation {}
        let stateful = StateEnumOperation { operation in
            onNewThread { operation.finish() }
        }
        let dependentRan = BlockingSignal()
        let dependent = BlockOperation { dependentRan.open() }
        stateful.addDependency(first)
        dependent.addDependency(stateful)
        queue.addOperations([first, stateful, dependent], waitUntilFinished: false)
        // The sample evaluates its conditions on another thread, then moves to `.ready`.
        onNewThread { stateful.conditionsEvaluated() }
        #expect(dependentRan.wait(), "the queue never heard the operation become ready or finish")
        #expect(stateful.isFinished)
    }

    @Test("an observer of isFinished hears \"state\" changes, with old and new values")
    func observerHearsDependentKey() {
        let operation = StateEnumOperation()
        let observer = StateObserver()
        operation.addObserver(observer, forKeyPath: "isFinished", options: [.old, .new], context: nil)
        operation.addObserver(observer, forKeyPath: "isExecuting", options: [.old, .new, .prior], context: nil)
        operation.conditionsEvaluated()
        operation.start()
        let finished = observer.events().filter { $0.keyPath == "isFinished" }
        #expect(finished.map { "\($0.old ?? "nil")→\($0.new ?? "nil")" } == ["false→false", "false→false", "false→true"])
        let executing = observer.events().filter { $0.keyPath == "isExecuting" }
        #expect(executing.map { "\($0.prior ? "prior " : "")\($0.old ?? "nil")→\($0.new ?? "nil")" } == [
            "prior false→nil", "false→false", "prior false→nil", "false→true", "prior true→nil", "true→false",
        ])
        operation.removeObserver(observer, forKeyPath: "isFinished")
        operation.removeObserver(observer, forKeyPath: "isExecuting")
    }

    @Test("dependencies are followed transitively, and a cycle of dependencies ends")
    func transitiveAndCyclic() {
        final class Chained: Operation, @unchecked Sendable {
            override class func keyPathsForValuesAffectingValue(forKey key: String) -> Set<String> {
                switch key {
                case "isFinished": ["phase"]
                case "phase": ["state", "isFinished"]  // a cycle back to isFinished
                case "state": ["phase"]  // and another one
                default: []
                }
            }
        }
        let operation = Chained()
        let observer = StateObserver()
        operation.addObserver(observer, forKeyPath: "isFinished", options: [.new], context: nil)
        operation.willChangeValue(forKey: "state")
        operation.didChangeValue(forKey: "state")
        #expect(observer.values(for: "isFinished") == ["false"])
        operation.removeObserver(observer, forKeyPath: "isFinished")
    }

    @Test("the class's answer is asked once per class, not at every announcement")
    func askedOncePerClass() {
        final class Counting: Operation, @unchecked Sendable {
            static let asked = Shared(0)
            override class func keyPathsForValuesAffectingValue(forKey key: String) -> Set<String> {
                asked.increment()
                return key == "isFinished" ? ["state"] : []
            }
        }
        let first = Counting()
        for _ in 0..<5 {
            first.willChangeValue(forKey: "state")
            first.didChangeValue(forKey: "state")
        }
        let afterFirst = Counting.asked()
        let second = Counting()
        for _ in 0..<5 {
            second.willChangeValue(forKey: "state")
            second.didChangeValue(forKey: "state")
        }
        #expect(afterFirst > 0, "the engine must ask the class")
        #expect(Counting.asked() == afterFirst)
    }
}

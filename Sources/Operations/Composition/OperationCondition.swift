// Conditions: requirements evaluated after an operation's dependencies and before it
// starts, implemented as a hidden dependency of the engine (never by overriding isReady).

/// A requirement an operation must meet to run (``Operation/addCondition(_:)``).
///
/// The condition is evaluated after the operation's dependencies have finished and before
/// it starts; `evaluate` may suspend. When it throws, the operation is cancelled with the
/// thrown error as the reason, and its `main()` never runs.
public protocol OperationCondition: Sendable {
    /// How messages and errors name the condition.
    var name: String { get }

    /// An operation that must run and finish before the condition is evaluated (say,
    /// "sign in"), or nil. It is added to the guarded operation's queue with it, unless it
    /// is in a queue already.
    func dependency(for operation: Operation) -> Operation?

    /// Throws when `operation` must not run; the error becomes its cancellation reason.
    /// - Important: Suspend rather than block: evaluations share a few serial lanes of the
    ///   library (not Swift's cooperative pool), and a blocked lane holds up the others.
    func evaluate(for operation: Operation) async throws
}

extension OperationCondition {
    /// The type's name.
    public var name: String { String(describing: Self.self) }

    /// No operation to run first.
    public func dependency(for operation: Operation) -> Operation? { nil }
}

/// The error a built-in condition fails with.
public struct ConditionFailedError: Error, CustomStringConvertible {
    /// The name of the condition that failed.
    public var condition: String
    /// The operation that will not run.
    public var operation: String
    /// Why, in words.
    public var reason: String

    public var description: String { "condition \(condition) of \(operation) failed: \(reason)" }
}

extension OperationExtensions where Self: Operation {
    /// Adds a condition the operation must meet to run: it is evaluated after the
    /// operation's dependencies have finished and before it starts. If it fails, the
    /// operation is cancelled with the condition's error and ``Operation/main()`` never runs.
    ///
    /// Conditions are evaluated one after another in the order added; the first failure
    /// decides. The evaluation is a hidden dependency of the operation (run on the
    /// operation's queue, which it joins when the operation is added).
    /// - Important: Adding a condition to an operation that is in a queue, executing or
    ///   finished is a programmer error; so is starting by hand an operation that has
    ///   conditions (they are evaluated on its queue).
    public func addCondition(_ condition: some OperationCondition) {
        guard let evaluator = _conditionEvaluatorForAdding() else {
            Misuse.fail("addCondition: \(_misuseName) is in a queue\(_groupClause), executing or finished; add conditions before adding it to a queue (or to a group)")
        }
        evaluator._append(condition, dependency: condition.dependency(for: self))
    }
}

extension Operation {
    /// The evaluator to add a condition or a category to (made on first use); nil when
    /// the operation is in a queue or has started.
    final func _conditionEvaluatorForAdding() -> ConditionEvaluator? {
        let created = ConditionEvaluator(guarding: self)
        let decision = _update { state -> (evaluator: ConditionEvaluator, isNew: Bool)? in
            guard case .idle = state.phase, state.queue == nil else { return nil }
            let extras = state.attachments ?? CompositionAttachments()
            state.attachments = extras
            if let existing = extras.conditions { return (existing, false) }
            extras.conditions = created
            return (created, true)
        }
        guard let (evaluator, isNew) = decision else { return nil }
        if isNew {
            // Evaluated after the dependencies it has now (later ones are forwarded by
            // `addDependency`), and before the operation starts.
            for dependency in dependencies { evaluator.addDependency(dependency) }
            _addEdge(from: evaluator, visible: false)
        }
        return evaluator
    }

    /// The evaluator of the operation's conditions, if it has any.
    final var _conditionEvaluator: ConditionEvaluator? {
        guard _hasExtras else { return nil }
        return _update { $0.attachments?.conditions }
    }

    /// The operation joined `queue`: its conditions' evaluator (and the operations they
    /// contribute) join it too.
    final func _scheduleConditions(on queue: OperationQueue) {
        guard let evaluator = _conditionEvaluator else { return }
        evaluator._schedule(on: queue)
    }
}

// Conditions: requirements evaluated after an operation's dependencies and before it
// starts, kept by the engine as a gate (never by overriding isReady).

import Operations

/// A requirement an operation must meet to run (``Operations/OperationExtensions/addCondition(_:)``).
///
/// The condition is evaluated after the operation's dependencies have finished and before
/// it starts; `evaluate` may suspend. When it throws, the operation is cancelled with the
/// thrown error as the reason, and its `main()` never runs.
public protocol OperationCondition: Sendable {
    /// How messages and errors name the condition.
    var name: String { get }

    /// An operation that must run and finish before the condition is evaluated (say,
    /// "sign in"), or nil. It joins the guarded operation's queue once the guarded
    /// operation's dependencies have finished, unless it is in a queue already; when the
    /// guarded operation is cancelled, finishes, or another condition fails, it is cancelled
    /// if it joined that way and nothing else needs it (no other guarded operation, no
    /// dependent).
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

    public var description: String { "condition \"\(condition)\" of \(operation) failed: \(reason)" }
}

extension OperationExtensions where Self: Operation {
    /// Adds a condition the operation must meet to run: it is evaluated after the
    /// operation's dependencies have finished and before it starts. If it fails, the
    /// operation is cancelled with the condition's error and `Operation.main()` never runs.
    ///
    /// Each condition is evaluated as soon as the operation's dependencies have finished and
    /// the operation it contributes (``OperationCondition/dependency(for:)``), if any, has
    /// finished; the first to fail decides at once. Conditions are a gate of the operation,
    /// not an operation: nothing is added to its queue for them but what they contribute.
    /// - Important: Adding a condition to an operation that is in a queue, executing or
    ///   finished is a programmer error; so is starting by hand an operation that has
    ///   conditions (they are evaluated on its queue).
    public func addCondition(_ condition: some OperationCondition) {
        guard let gate = _gate(ConditionGate.self, orAdd: { ConditionGate() }) else {
            Misuse.fail("addCondition: \(_misuseName) is in a queue\(_groupClause), executing or finished; add conditions before adding it to a queue (or to a group)")
        }
        let contributed = condition.dependency(for: self)
        gate.append(condition, contributed: contributed)
        // The guarded operation waits for it from now on, not only once its gate is
        // consulted: the wait graph finds it here when it asks who still wants it.
        contributed?._onFinish(for: .operation(WeakOperationReference(self))) { _ in }
    }
}

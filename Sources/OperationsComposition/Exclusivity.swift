// Mutual exclusivity: categories of operations that must not run at the same time.

import Operations

/// How an operation holds a category (``Operations/OperationExtensions/addExclusivity(_:mode:)``).
public enum ExclusivityMode: Sendable {
    /// Alone: no other operation of the category runs meanwhile (a writer).
    case exclusive
    /// With other shared holders, never with an exclusive one (a reader).
    case shared
}

extension OperationExtensions where Self: Operation {
    /// Makes the operation hold `category` while it runs: at most one operation per
    /// category in `.exclusive` mode runs at a time, process-wide and across queues;
    /// `.shared` holders run together but never with an exclusive one.
    ///
    /// ```swift
    /// showAlert.addExclusivity("alert")
    /// write.addExclusivity("database")
    /// read.addExclusivity("database", mode: .shared)
    /// ```
    ///
    /// The operation asks for its categories once its dependencies have finished and its
    /// conditions hold, and gets all of them at once (or waits for all): two operations
    /// with overlapping categories can never deadlock. Requests are granted first come,
    /// first served per category (a waiting exclusive request is not overtaken by later
    /// shared ones), in the order they ask, not the order added: a place taken when added
    /// would make an operation still waiting for a dependency hold up later ones, forever
    /// when it depends on one of them. An operation asks once its dependencies have finished, its conditions
    /// hold and its queue is not suspended, on the thread where that happened; one whose
    /// turn in line comes while its queue is suspended is passed over, keeping its place,
    /// until the queue resumes. Waiting
    /// blocks no thread and holds no queue slot: the categories are a gate of the
    /// operation, not an operation. It gives them back when it finishes (or when it is
    /// cancelled, or gains a dependency, before it started).
    /// - Important: Like ``addCondition(_:)``, only before the operation is added to a
    ///   queue; an operation with categories runs from a queue, not by hand.
    public func addExclusivity(_ category: String, mode: ExclusivityMode = .exclusive) {
        guard let gate = _gate(ExclusivityGate.self, orAdd: { ExclusivityGate() }) else {
            Misuse.fail("addExclusivity: \(_misuseName) is in a queue\(_groupClause), executing or finished; add categories before adding it to a queue (or to a group)")
        }
        gate.append(category, mode: mode)
    }
}

/// Why an operation was cancelled instead of waiting forever for a category: it asked for
/// exclusive access inside a group (or retry) that holds the category only shared.
public struct ExclusivityError: Error, CustomStringConvertible {
    /// The category.
    public var category: String
    /// The operation that asked, as messages name it.
    public var operation: String
    /// The group or retry holding the category shared, as messages name it.
    public var owner: String

    public var description: String {
        "\(operation) asks for exclusive access to \(category) inside \(owner), which holds it shared: it could never be granted"
    }
}

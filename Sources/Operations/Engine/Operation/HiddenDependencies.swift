// The barriers an operation waits for, which leave as they finish.

/// An operation's hidden dependencies (barriers: ``Operation/dependencies`` does not list
/// them), in the order added. One that finishes leaves at once, in O(1), so that a barrier
/// keeps none of the operations before it alive once they finished, and an operation after
/// a barrier does not keep the barrier.
///
/// Left entries are holes, filled in when they are more than half of the list (amortized
/// O(1)); a long list keeps the positions of its members.
struct HiddenDependencies {
    private var slots: [Operation?] = []
    private var holes = 0
    /// Where each member is, once the list is long.
    private var positions: [ObjectIdentifier: Int]?

    var isEmpty: Bool { slots.count == holes }

    /// The members, in the order added.
    var all: [Operation] { slots.compactMap { $0 } }

    mutating func append(_ operation: Operation) {
        positions?[ObjectIdentifier(operation)] = slots.count
        slots.append(operation)
        if positions == nil, slots.count > OperationCore.shortList { indexPositions() }
    }

    /// Takes `operation` off the list; returns the reference the list held, for the caller
    /// to drop after the lock, or nil when it was not listed.
    mutating func remove(_ operation: ObjectIdentifier) -> Operation? {
        let position: Int
        if positions != nil {
            guard let found = positions!.removeValue(forKey: operation) else { return nil }
            position = found
        } else {
            guard let found = slots.firstIndex(where: { $0.map(ObjectIdentifier.init) == operation }) else { return nil }
            position = found
        }
        let removed = slots[position]
        slots[position] = nil
        holes += 1
        if holes * 2 > slots.count { compact() }
        return removed
    }

    /// Gives up every member.
    mutating func takeAll() -> [Operation] {
        defer { self = HiddenDependencies() }
        return all
    }

    private mutating func compact() {
        slots = slots.filter { $0 != nil }
        holes = 0
        if positions != nil { indexPositions() }
    }

    private mutating func indexPositions() {
        var index: [ObjectIdentifier: Int] = [:]
        for (position, member) in slots.enumerated() {
            if let member { index[ObjectIdentifier(member)] = position }
        }
        positions = index
    }
}

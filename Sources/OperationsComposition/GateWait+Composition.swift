// How composition's gates say why an operation waits at them.

import Operations

extension Operation.GateWait {
    /// A condition (`addCondition(_:)`) is being evaluated, or waits for the
    /// operation it contributed to finish.
    public static func condition(_ name: String, waitsFor contributed: Operation?) -> Self {
        Self(
            gate: "condition", names: [name], waitsFor: contributed.map { [$0] } ?? [],
            description: contributed.map { "its condition \"\(name)\" waits for \($0._misuseName) to finish" }
                ?? "its condition \"\(name)\" is being evaluated")
    }

    /// It waits to hold its exclusivity categories (`addExclusivity(_:mode:)`).
    public static func exclusivity(_ categories: [String]) -> Self {
        Self(
            gate: "exclusivity", names: categories,
            description: "it waits for exclusive access to \(categories.joined(separator: ", "))")
    }
}

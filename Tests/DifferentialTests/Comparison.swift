import DifferentialPrograms

/// Compares what the two implementations observed running one program.
///
/// Linux's Foundation runs each program several times; only what it observed the same way in
/// every run (a "stable" key) is compared, so its own nondeterminism never counts as a
/// divergence. `Operations` must observe every stable key the same way in each of its runs,
/// and nothing Foundation never observed.
enum Comparison {
    struct Difference: Sendable, CustomStringConvertible {
        let key: String
        let foundation: String?
        let operations: String?

        var description: String {
            "\(key): Foundation \(foundation.map { "\"\($0)\"" } ?? "(none)"), Operations \(operations.map { "\"\($0)\"" } ?? "(none)")"
        }
    }

    enum Verdict: Sendable {
        case agreed(stableKeys: Int, unstableKeys: Int)
        /// Linux's Foundation did not finish every run: the program says nothing.
        case foundationFailed(String)
        case diverged([Difference], operationsFailure: String?)
    }

    static func compare(_ program: Program, foundation: Outcome?, operations: Outcome?, filtered: Bool) -> Verdict {
        guard let foundation, foundation.failure == nil, !foundation.runs.isEmpty else {
            return .foundationFailed(foundation?.failure ?? "no output")
        }
        guard let operations, operations.failure == nil, !operations.runs.isEmpty else {
            return .diverged([], operationsFailure: operations?.failure ?? "no output")
        }
        let foundationRuns = foundation.runs.map { filtered ? applyFilters(program, $0) : $0 }
        let operationsRuns = operations.runs.map { filtered ? applyFilters(program, $0) : $0 }
        let everyKey = foundationRuns.reduce(Set<String>()) { $0.union($1.keys) }
        var stable: Transcript = [:]
        for key in everyKey {
            let values = foundationRuns.map { $0[key] }
            if let first = values[0], values.allSatisfy({ $0 == first }) { stable[key] = first }
        }
        var differences: [String: Difference] = [:]
        for run in operationsRuns {
            for (key, value) in stable where run[key] != value {
                differences[key] = Difference(key: key, foundation: value, operations: run[key])
            }
            for (key, value) in run where !everyKey.contains(key) {
                differences[key] = Difference(key: key, foundation: nil, operations: value)
            }
        }
        if differences.isEmpty {
            return .agreed(stableKeys: stable.count, unstableKeys: everyKey.count - stable.count)
        }
        return .diverged(differences.values.sorted { $0.key < $1.key }, operationsFailure: nil)
    }

    static func applyFilters(_ program: Program, _ transcript: Transcript) -> Transcript {
        var transcript = transcript
        for filter in DeliberateDifference.filters { filter(program, &transcript) }
        return transcript
    }

    static func render(_ transcript: Transcript?) -> String {
        guard let transcript else { return "    (none)" }
        return transcript.sorted { $0.key < $1.key }.map { "    \($0.key)\t\($0.value)" }.joined(separator: "\n")
    }
}

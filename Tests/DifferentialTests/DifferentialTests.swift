import DifferentialPrograms
import Foundation
import Testing

/// Runs the same programs against Linux's Foundation and against `Operations` (two
/// executables compiled from one interpreter) and compares what a user can observe.
///
/// Environment:
/// - `OPERATIONS_DIFFERENTIAL_PROGRAMS=N`: how many generated programs (default 1000; 200
///   under a sanitizer).
/// - `OPERATIONS_DIFFERENTIAL_FIRST_SEED=S`: the first seed (default 0); seeds S..<S+N run.
/// - `OPERATIONS_DIFFERENTIAL_SEED=S`: replay one seed, printing the program and both
///   transcripts whether or not they agree.
/// - `OPERATIONS_DIFFERENTIAL_RUNS=K`: how often Linux's Foundation runs each program (default 3).
/// - `OPERATIONS_DIFFERENTIAL_OPERATIONS=N`: at most N operations a program (default 6).
@Suite("Differential: Linux's Foundation and Operations observe the same", .serialized)
struct DifferentialTests {
    static let environment = ProcessInfo.processInfo.environment

    static func setting(_ name: String) -> Int? {
        environment[name].flatMap { Int($0) }
    }

    /// 1,000 programs take about 3 s; under a sanitizer (its runtime is loaded in this
    /// process too) everything is several times slower, and 200 do.
    static var defaultPrograms: Int {
        dlsym(nil, "__tsan_init") != nil || dlsym(nil, "__asan_init") != nil ? 200 : 1000
    }

    static var foundationRuns: Int { max(2, setting("OPERATIONS_DIFFERENTIAL_RUNS") ?? 3) }
    static let operationsRuns = 2
    /// A bound for finding a hang, not a speed target: a loaded machine running the
    /// whole suite (PostgreSQL clusters, worker processes) is slow, and only a program
    /// that hangs ever waits this long.
    static let timeout = 60

    @Test("the executables are built beside the tests")
    func executablesAreBuilt() throws {
        for implementation in [Implementation.foundation, .operations] {
            try #require(
                FileManager.default.isExecutableFile(atPath: implementation.executable.path),
                "\(implementation.executable.path) is missing: `swift test` builds it (a dependency of the test target)")
        }
    }

    @Test("named programs: the minimal divergence patterns and the patterns of the finishing rule agree")
    func namedPrograms() throws {
        let report = try Self.compare(NamedPrograms.all, filtered: false, replay: false)
        for program in NamedPrograms.all where report.foundationFailures.contains(program.identifier) {
            Issue.record("Linux's Foundation did not finish \(program.identifier):\n\(program)")
        }
        for program in NamedPrograms.all {
            let expected = try #require(NamedPrograms.expectations[program.identifier], "\(program.identifier) has expectations")
            for (implementation, outcome) in [("Linux's Foundation", report.outcomes.foundation), ("Operations", report.outcomes.operations)] {
                for run in outcome[program.identifier]?.runs ?? [] {
                    for (key, value) in expected where run[key] != value {
                        Issue.record("\(program.identifier) on \(implementation): \(key) is \(run[key].map { "\"\($0)\"" } ?? "missing"), expected \"\(value)\"\n\(program)")
                    }
                }
            }
        }
        Self.printSummary(report.summary(label: "named programs"))
    }

    @Test("generated programs agree, but for the deliberate differences")
    func generatedPrograms() throws {
        let replay = Self.setting("OPERATIONS_DIFFERENTIAL_SEED")
        let first = replay ?? Self.setting("OPERATIONS_DIFFERENTIAL_FIRST_SEED") ?? 0
        let count = replay == nil ? max(1, Self.setting("OPERATIONS_DIFFERENTIAL_PROGRAMS") ?? Self.defaultPrograms) : 1
        let parameters = GeneratorParameters(
            maximumOperations: Self.setting("OPERATIONS_DIFFERENTIAL_OPERATIONS") ?? GeneratorParameters().maximumOperations)
        let programs = (first..<(first + count)).map { ProgramGenerator.program(seed: UInt64($0), parameters: parameters) }
        let report = try Self.compare(
            programs, filtered: true, replay: replay != nil, options: ["--operations", "\(parameters.maximumOperations)"])
        Self.printSummary(report.summary(label: "generated programs, seeds \(first)..<\(first + count)"))
    }

    /// The log of a plain `swift test` shows results only; a run given any of the settings
    /// above also says what it compared.
    static func printSummary(_ summary: String) {
        if environment.keys.contains(where: { $0.hasPrefix("OPERATIONS_DIFFERENTIAL_") }) { print(summary) }
    }

    struct Report {
        var outcomes: (foundation: [String: Outcome], operations: [String: Outcome]) = ([:], [:])
        var programs = 0
        var foundationFailures: [String] = []
        var stableKeys = 0
        var unstableKeys = 0
        var divergences = 0
        var startOrdersCompared = 0
        var seconds = 0.0
        var foundationRuns = 0
        var operationsRuns = 0

        func summary(label: String) -> String {
            var text = "Differential, \(label): \(programs) programs, each run \(foundationRuns)× on Linux's Foundation and \(operationsRuns)× on Operations, in \(String(format: "%.1f", seconds)) s; "
            text += "\(stableKeys) observations compared (\(startOrdersCompared) start orders), \(unstableKeys) left out as unstable on Foundation; "
            text += "\(divergences) divergent"
            if !foundationFailures.isEmpty {
                text += "; \(foundationFailures.count) skipped, Linux's Foundation did not finish them: \(foundationFailures.prefix(20).joined(separator: ", "))\(foundationFailures.count > 20 ? ", …" : "")"
            }
            return text
        }
    }

    /// Runs `programs` on both implementations and records an issue per divergence.
    static func compare(_ programs: [Program], filtered: Bool, replay: Bool, options: [String] = []) throws -> Report {
        let started = ContinuousClock.now
        let identifiers = programs.map(\.identifier)
        let outcomes = try Harness.runBoth(
            identifiers, foundationRuns: foundationRuns, operationsRuns: operationsRuns, timeout: timeout, options: options)
        var report = Report(
            outcomes: outcomes, programs: programs.count, foundationRuns: foundationRuns, operationsRuns: operationsRuns)
        for program in programs {
            let foundation = outcomes.foundation[program.identifier]
            let operations = outcomes.operations[program.identifier]
            let verdict = Comparison.compare(program, foundation: foundation, operations: operations, filtered: filtered)
            if replay { print(details(program, foundation: foundation, operations: operations, verdict: verdict)) }
            switch verdict {
            case .agreed(let stable, let unstable):
                report.stableKeys += stable
                report.unstableKeys += unstable
                if program.startOrderIsDefined && foundation?.runs.first?["order"] != nil { report.startOrdersCompared += 1 }
            case .foundationFailed:
                report.foundationFailures.append(program.identifier)
            case .diverged:
                report.divergences += 1
                Issue.record(Comment(rawValue: details(program, foundation: foundation, operations: operations, verdict: verdict)))
            }
        }
        report.seconds = Double((ContinuousClock.now - started).components.seconds)
            + Double((ContinuousClock.now - started).components.attoseconds) / 1e18
        return report
    }

    static func details(_ program: Program, foundation: Outcome?, operations: Outcome?, verdict: Comparison.Verdict) -> String {
        var lines: [String] = []
        switch verdict {
        case .agreed: lines.append("\(program.identifier): agreed")
        case .foundationFailed(let reason): lines.append("\(program.identifier): Linux's Foundation did not finish: \(reason)")
        case .diverged(let differences, let failure):
            lines.append("\(program.identifier): Linux's Foundation and Operations diverge")
            if let failure { lines.append("  Operations did not finish: \(failure)") }
            lines += differences.map { "  \($0)" }
        }
        if program.identifier.hasPrefix("seed:") {
            let size = environment["OPERATIONS_DIFFERENTIAL_OPERATIONS"].map { "OPERATIONS_DIFFERENTIAL_OPERATIONS=\($0) " } ?? ""
            lines.append(
                "Replay: \(size)OPERATIONS_DIFFERENTIAL_SEED=\(program.identifier.dropFirst("seed:".count)) swift test --filter DifferentialTests")
        }
        lines.append("The program:")
        lines.append(program.description)
        lines.append("Linux's Foundation, first run:")
        lines.append(Comparison.render(foundation?.runs.first))
        lines.append("Operations, first run:")
        lines.append(Comparison.render(operations?.runs.first))
        return lines.joined(separator: "\n")
    }
}

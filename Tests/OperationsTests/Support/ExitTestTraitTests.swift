import Foundation
import Testing

/// Every exit test of the package's test targets has the trait that runs exit tests one at a
/// time (`OneExitTestAtATime`): checked on the sources, since one without it could hold a
/// second thread of Swift's cooperative pool.
///
/// An exit test's time limit counts its wait in that line, which under Thread Sanitizer
/// (where each child starts slowly, and some run thousands of operations) lasted up to 90 s:
/// a suite holding an exit test has a limit of at least three minutes, or none.
@Suite("Exit tests run one at a time")
struct ExitTestTraitTests {
    static let shortestLimitInMinutes = 3

    @Test("every exit test of the package has the trait that runs exit tests one at a time, in a suite with room for the wait")
    func everyExitTestHasTheTrait() throws {
        let tests = EngineLayeringTests.root.appendingPathComponent("Tests")
        let files = FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        var exitTests = 0
        var missing: [String] = []
        var short: [String] = []
        for file in files {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() where Self.isExitTest(line) {
                exitTests += 1
                let attribute = lines[..<index].last { $0.contains("@Test(") }
                if attribute?.contains(".oneExitTestAtATime") != true {
                    missing.append("\(file.lastPathComponent):\(index + 1)")
                }
                if let suite = lines[..<index].last(where: { $0.contains("@Suite(") }),
                    let minutes = Self.minutesOfTimeLimit(in: suite), minutes < Self.shortestLimitInMinutes
                {
                    short.append("\(file.lastPathComponent):\(index + 1) (\(minutes) min)")
                }
            }
        }
        #expect(exitTests >= 50, "the exit tests were not found under \(tests.path)")
        #expect(missing.isEmpty, "exit tests without .oneExitTestAtATime: \(missing.joined(separator: ", "))")
        #expect(short.isEmpty, "exit tests in suites whose time limit leaves no room for the line: \(short.joined(separator: ", "))")
    }

    /// N of `.timeLimit(.minutes(N))` in a suite's attribute line; nil without one.
    static func minutesOfTimeLimit(in line: Substring) -> Int? {
        guard let start = line.range(of: ".timeLimit(.minutes(")?.upperBound else { return nil }
        return Int(line[start...].prefix { $0.isNumber })
    }

    /// A line of code (not a comment) that starts an exit test.
    static func isExitTest(_ line: Substring) -> Bool {
        let code = line.trimmingCharacters(in: .whitespaces)
        // Spelled in two parts, so that this line is not one.
        return !code.hasPrefix("//") && code.contains("#expect(" + "processExitsWith:")
    }
}

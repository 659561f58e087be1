import Foundation
import Testing

/// Every exit test of the package's test targets has the trait that runs exit tests one at a
/// time (`OneExitTestAtATime`): checked on the sources, since one without it could hold a
/// second thread of Swift's cooperative pool.
@Suite("Exit tests run one at a time")
struct ExitTestTraitTests {
    @Test("every exit test of the package has the trait that runs exit tests one at a time")
    func everyExitTestHasTheTrait() throws {
        let tests = EngineLayeringTests.root.appendingPathComponent("Tests")
        let files = FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        var exitTests = 0
        var missing: [String] = []
        for file in files {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() where Self.isExitTest(line) {
                exitTests += 1
                let attribute = lines[..<index].last { $0.contains("@Test(") }
                if attribute?.contains(".oneExitTestAtATime") != true {
                    missing.append("\(file.lastPathComponent):\(index + 1)")
                }
            }
        }
        #expect(exitTests >= 50, "the exit tests were not found under \(tests.path)")
        #expect(missing.isEmpty, "exit tests without .oneExitTestAtATime: \(missing.joined(separator: ", "))")
    }

    /// A line of code (not a comment) that starts an exit test.
    static func isExitTest(_ line: Substring) -> Bool {
        let code = line.trimmingCharacters(in: .whitespaces)
        // Spelled in two parts, so that this line is not one.
        return !code.hasPrefix("//") && code.contains("#expect(" + "processExitsWith:")
    }
}

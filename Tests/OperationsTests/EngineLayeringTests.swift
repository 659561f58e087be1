import Foundation
import Testing

/// The engine names nothing of the layers above it: they plug in through the hooks it
/// declares (`Engine/LayerHooks.swift`). Checked on the sources themselves.
@Suite("Layers: the engine names nothing above it")
struct EngineLayeringTests {
    /// The package's root, from this file's path (Tests/OperationsTests/<file>).
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The folders of the `Operations` module above the engine, and the modules built on it.
    static let upperFolders = [
        "Sources/Operations/Async", "Sources/Operations/Observation", "Sources/Operations/Diagnostics",
        "Sources/OperationsComposition", "Sources/OperationsRecording", "Sources/OperationsTracing",
        "Sources/OperationsMetrics", "Sources/OperationsLogging", "Sources/OperationsDurable",
        "Sources/OperationsPostgres", "Sources/OperationsSQLite", "Sources/OperationsTestSupport",
        "Sources/OperationsXCTest",
    ]
    /// Where the engine, and what it stands on (the classes whose objects it schedules,
    /// the lock), declare names: a name declared here as well is not the upper layers' own.
    static let sharedFolders = [
        "Sources/Operations/Engine", "Sources/Operations/Foundation", "Sources/Operations/Support",
    ]

    static func swiftFiles(in folder: String) -> [URL] {
        let url = root.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(at: url, includingPropertiesForKeys: nil) else {
            return []
        }
        return walker.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
    }

    /// Names the standard library's protocols give their associated types and generic
    /// parameters: a layer declaring one (an `AsyncSequence`'s `Element`) does not own it.
    static let standardNames: Set<String> = ["Element", "Index", "Iterator", "AsyncIterator", "Failure", "Value", "Key"]

    /// The source without comments (a `//` to the end of its line, doc comments included)
    /// and without the text of string literals (messages name the module).
    static func code(of file: URL) throws -> [String] {
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in
                var code = ""
                var inString = false
                var previous: Character = " "
                for character in line {
                    if character == "\"" && previous != "\\" {
                        inString.toggle()
                    } else if !inString {
                        if character == "/" && previous == "/" {
                            code.removeLast()
                            break
                        }
                        code.append(character)
                    }
                    previous = character
                }
                return code
            }
    }

    /// The names a file declares that could only be a layer's own: types, and members
    /// whose names begin with an underscore (the package's cross-layer members).
    static func declaredNames(in file: URL) throws -> Set<String> {
        let declaration = /\b(?:class|struct|enum|protocol|actor|typealias|func|var|let|case)\s+([A-Za-z_][A-Za-z0-9_]*)/
        var names = Set<String>()
        for line in try code(of: file) {
            for match in line.matches(of: declaration) {
                let name = String(match.output.1)
                guard name.count > 1, !standardNames.contains(name) else { continue }
                if name.first == "_" || name.first!.isUppercase { names.insert(name) }
            }
        }
        return names
    }

    static func names(in folders: [String]) throws -> [String: String] {
        var found: [String: String] = [:]
        for folder in folders {
            for file in swiftFiles(in: folder) {
                for name in try declaredNames(in: file) where found[name] == nil {
                    found[name] = file.lastPathComponent
                }
            }
        }
        return found
    }

    @Test("no engine source names a type or hook declared only in a layer above")
    func engineNamesNothingAbove() throws {
        let shared = try Self.names(in: Self.sharedFolders)
        let upper = try Self.names(in: Self.upperFolders).filter { shared[$0.key] == nil }
        #expect(upper.count > 50, "the upper layers' declarations were not found under \(Self.root.path)")
        let engine = Self.swiftFiles(in: "Sources/Operations/Engine")
        #expect(engine.count > 5)
        var violations: [String] = []
        for file in engine {
            for (number, line) in try Self.code(of: file).enumerated() {
                for word in line.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }) {
                    if let home = upper[String(word)] {
                        violations.append("\(file.lastPathComponent):\(number + 1) names \(word) (declared in \(home))")
                    }
                }
            }
        }
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }
}

import Foundation
import Testing

/// The engine names nothing of the layers above it: they plug in through the hooks it
/// declares (`Engine/LayerHooks.swift`). Observation, above the Foundation-shaped classes,
/// names nothing of async, diagnostics or the wait graph: a registration says itself how it
/// is removed. (Diagnostics needs no such scan for the modules built on `Operations`: it cannot
/// name them, and a gate of theirs says why it holds an operation, `Operation.GateWait`.)
/// Checked on the sources themselves. (The scan reads
/// lines: the text of a multi-line string or of a `/* */` comment counts as code.)
@Suite("Layers: the engine names nothing above it")
struct EngineLayeringTests {
    /// The package's root, from this file's path (Tests/OperationsTests/Engine/<file>).
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

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

    /// The source's lines without comments (a `//` to the end of its line, doc comments
    /// included) and without the text of string literals (messages name the module).
    /// Read as bytes: a scan by characters takes a minute under Thread Sanitizer.
    static func code(of file: URL) throws -> [[UInt8]] {
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), slash = UInt8(ascii: "/")
        return try Data(contentsOf: file).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .map { line in
                var code: [UInt8] = []
                var inString = false
                var previous: UInt8 = 0
                for byte in line {
                    if byte == quote && previous != backslash {
                        inString.toggle()
                    } else if !inString {
                        if byte == slash && previous == slash {
                            code.removeLast()
                            break
                        }
                        code.append(byte)
                    }
                    previous = byte
                }
                return code
            }
    }

    static func isNamePart(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_") || byte >= 0x80
    }

    /// The words of a line of code, each with whether only spaces or tabs separate it from
    /// the one before.
    static func words(of line: [UInt8]) -> [(word: String, afterSpaces: Bool)] {
        var words: [(word: String, afterSpaces: Bool)] = []
        var index = 0
        var lastEnd = -1
        while index < line.count {
            guard isNamePart(line[index]) else { index += 1; continue }
            let start = index
            while index < line.count && isNamePart(line[index]) { index += 1 }
            let gap = lastEnd < 0 ? [] : line[lastEnd..<start]
            let afterSpaces = lastEnd >= 0 && !gap.isEmpty && gap.allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            words.append((String(decoding: line[start..<index], as: UTF8.self), afterSpaces))
            lastEnd = index
        }
        return words
    }

    static let declarationKeywords: Set<String> = ["class", "struct", "enum", "protocol", "actor", "typealias", "func", "var", "let", "case"]

    /// The names a file declares that could only be a layer's own: types, and members
    /// whose names begin with an underscore (the package's cross-layer members).
    static func declaredNames(in file: URL) throws -> Set<String> {
        var names = Set<String>()
        for line in try code(of: file) {
            let words = words(of: line)
            for (index, word) in words.enumerated().dropFirst()
            where word.afterSpaces && declarationKeywords.contains(words[index - 1].word) {
                let name = word.word
                guard name.count > 1, !standardNames.contains(name), !name.first!.isNumber else { continue }
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
    func engineNamesNothingAbove() async throws {
        // On a thread of its own: under a sanitizer the scan takes a while.
        let scan = try await onOwnThread { () throws -> Scan in
            try Self.scan(["Sources/Operations/Engine"], above: Self.upperFolders, shared: Self.sharedFolders)
        }
        #expect(scan.upperNames > 50, "the upper layers' declarations were not found under \(Self.root.path)")
        #expect(scan.scannedFiles > 5)
        #expect(scan.violations.isEmpty, "\(scan.violations.joined(separator: "\n"))")
    }

    @Test("no observation source names a type or hook declared only in the folders above it or in a module built on Operations")
    func observationNamesNothingAbove() async throws {
        let above = ["Sources/Operations/Async", "Sources/Operations/Diagnostics", "Sources/Operations/WaitGraph"]
            + Self.upperFolders.filter { !$0.hasPrefix("Sources/Operations/") }
        let scan = try await onOwnThread { () throws -> Scan in
            try Self.scan(
                ["Sources/Operations/Observation"], above: above,
                shared: Self.sharedFolders + ["Sources/Operations/Observation"])
        }
        #expect(scan.upperNames > 50, "the upper layers' declarations were not found under \(Self.root.path)")
        #expect(scan.scannedFiles > 10)
        #expect(scan.violations.isEmpty, "\(scan.violations.joined(separator: "\n"))")
    }

    struct Scan {
        var upperNames: Int
        var scannedFiles: Int
        /// Where a scanned file names an upper layer's own name.
        var violations: [String]
    }

    /// The places in `folders` that name a type or hook declared in `above` and not in `shared`.
    static func scan(_ folders: [String], above: [String], shared sharedFolders: [String]) throws -> Scan {
        let shared = try Self.names(in: sharedFolders)
        let upper = try Self.names(in: above).filter { shared[$0.key] == nil }
        let scanned = folders.flatMap { Self.swiftFiles(in: $0) }
        var violations: [String] = []
        for file in scanned {
            for (number, line) in try Self.code(of: file).enumerated() {
                for (word, _) in Self.words(of: line) {
                    if let home = upper[word] {
                        violations.append("\(file.lastPathComponent):\(number + 1) names \(word) (declared in \(home))")
                    }
                }
            }
        }
        return Scan(upperNames: upper.count, scannedFiles: scanned.count, violations: violations)
    }
}

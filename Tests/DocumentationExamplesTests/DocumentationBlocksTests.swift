import Foundation
import Testing

/// Every ```swift block of the README and of the DocC articles appears verbatim in this
/// target's sources, which the build compiles: a block changed in the documentation and
/// not here (or the other way round) fails this test, and a block that does not compile
/// fails the build.
///
/// A block may sit inside a function, indented or not. Its leading imports (with any
/// `#if`/`#endif` around them) may stand at the top of the file, apart from the rest of
/// the block, which then follows them in the same file. A block preceded by a line
/// `<!-- not compiled: REASON -->` is left out (a fragment of a `Package.swift`, a
/// block that shows a compile error).
@Suite("Documentation: every Swift block of the README and the articles is compiled")
struct DocumentationBlocksTests {
    /// The package's root, from this file's path (Tests/DocumentationExamplesTests/<file>).
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// This target's folder.
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

    /// The README and every article of every DocC catalog under `Sources/`.
    static func documents() throws -> [URL] {
        var documents = [root.appendingPathComponent("README.md")]
        let sources = root.appendingPathComponent("Sources")
        for path in try FileManager.default.subpathsOfDirectory(atPath: sources.path).sorted()
        where path.hasSuffix(".md") && path.split(separator: "/").contains(where: { $0.hasSuffix(".docc") }) {
            documents.append(sources.appendingPathComponent(path))
        }
        return documents
    }

    /// The Swift sources of this target, by path relative to its folder.
    static func compiledSources() throws -> [(path: String, text: String)] {
        try FileManager.default.subpathsOfDirectory(atPath: examples.path).sorted()
            .filter { $0.hasSuffix(".swift") }
            .map { ($0, try String(contentsOf: examples.appendingPathComponent($0), encoding: .utf8)) }
    }

    @Test("each Swift block of the README and of every article appears verbatim in this target")
    func everySwiftBlockIsCompiled() throws {
        let documents = try Self.documents()
        #expect(documents.count > 10, "found only \(documents.map(\.lastPathComponent))")
        let sources = try Self.compiledSources()
        var checked = 0
        for document in documents {
            let markdown = try String(contentsOf: document, encoding: .utf8)
            let name = document.path.replacingOccurrences(of: Self.root.path + "/", with: "")
            for block in FencedBlock.swiftBlocks(in: markdown) where !block.isNotCompiled {
                checked += 1
                #expect(
                    sources.contains { block.appears(in: $0.text) },
                    "the Swift block at \(name):\(block.line) is in none of Tests/DocumentationExamplesTests/*.swift:\n\(block.lines.joined(separator: "\n"))")
            }
        }
        #expect(checked > 30, "checked only \(checked) blocks")
    }

    @Test("the extraction finds blocks, their lines, the imports before them and the marker")
    func extractionReadsFencesAndMarkers() {
        let markdown = """
            Text.

            ```swift
            import Operations

            let queue = OperationQueue()
            ```

            <!-- not compiled: a fragment of Package.swift -->
            ```swift
            .target(name: "App")
            ```

            ```sh
            swift test
            ```
            """
        let blocks = FencedBlock.swiftBlocks(in: markdown)
        #expect(blocks.map(\.line) == [3, 10])
        #expect(blocks.map(\.isNotCompiled) == [false, true])
        #expect(blocks[0].importLines == ["import Operations"])
        #expect(blocks[0].bodyLines == ["let queue = OperationQueue()"])
        #expect(blocks[0].appears(in: "import Operations\nfunc f() {\n    let queue = OperationQueue()\n}\n"))
        #expect(!blocks[0].appears(in: "func f() {\n    let queue = OperationQueue()\n}\n"))
        #expect(!blocks[0].appears(in: "func f() {\n    let queue = OperationQueue()\n}\nimport Operations\n"))
    }
}

/// A fenced code block of a Markdown document.
struct FencedBlock {
    /// The line of the opening fence, from 1.
    let line: Int
    let lines: [String]
    /// The line before the opening fence is `<!-- not compiled: … -->`.
    let isNotCompiled: Bool

    static let notCompiledMarker = "<!-- not compiled:"

    /// The blocks whose info string is `swift` (and nothing else).
    static func swiftBlocks(in markdown: String) -> [FencedBlock] {
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var blocks: [FencedBlock] = []
        var index = 0
        while index < lines.count {
            let opening = lines[index].trimmingCharacters(in: .whitespaces)
            guard opening.hasPrefix("```") else {
                index += 1
                continue
            }
            let indentation = lines[index].prefix { $0 == " " }.count
            let info = opening.dropFirst(3).trimmingCharacters(in: .whitespaces)
            var end = index + 1
            while end < lines.count, lines[end].trimmingCharacters(in: .whitespaces) != "```" { end += 1 }
            if info == "swift" {
                let marker = index > 0 && lines[index - 1].trimmingCharacters(in: .whitespaces).hasPrefix(notCompiledMarker)
                let body = lines[(index + 1)..<min(end, lines.count)].map { String($0.dropFirst(min(indentation, $0.prefix { $0 == " " }.count))) }
                blocks.append(FencedBlock(line: index + 1, lines: body, isNotCompiled: marker))
            }
            index = end + 1
        }
        return blocks
    }

    /// The block's leading imports, with the blank lines and `#if`/`#endif` among them:
    /// the longest prefix of such lines that ends where its `#if`s are closed.
    var importLines: [String] {
        var depth = 0
        var end = 0
        for (offset, line) in lines.enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("#if") {
                depth += 1
            } else if trimmed.hasPrefix("#endif") {
                depth -= 1
            } else if !(trimmed.isEmpty || trimmed.hasPrefix("#else") || trimmed.hasPrefix("#elseif")
                || trimmed.hasPrefix("import ") || trimmed.hasPrefix("@testable import ")) {
                break
            }
            if depth == 0 && !trimmed.isEmpty { end = offset + 1 }
        }
        let prefix = Array(lines[..<end])
        return prefix.contains { $0.hasPrefix("import ") || $0.hasPrefix("@testable import ") } ? prefix : []
    }

    /// The block after its leading imports (and the blank lines after them).
    var bodyLines: [String] {
        Array(lines.dropFirst(importLines.count).drop { $0.trimmingCharacters(in: .whitespaces).isEmpty })
    }

    /// Whether `source` holds the block verbatim (indented by a multiple of four spaces), or
    /// its imports followed, later in the file, by the rest of it.
    func appears(in source: String) -> Bool {
        if Self.range(of: lines, in: source) != nil { return true }
        let imports = importLines
        guard !imports.isEmpty, let header = Self.range(of: imports, in: source, indented: false) else { return false }
        return Self.range(of: bodyLines, in: String(source[header.upperBound...])) != nil
    }

    private static func range(of lines: [String], in source: String, indented: Bool = true) -> Range<String.Index>? {
        for depth in 0...(indented ? 3 : 0) {
            let indentation = String(repeating: " ", count: 4 * depth)
            let text = lines.map { $0.isEmpty ? $0 : indentation + $0 }.joined(separator: "\n")
            // Whole lines: the text starts a line and ends one.
            var searchStart = source.startIndex
            while let found = source.range(of: text, range: searchStart..<source.endIndex) {
                let startsLine = found.lowerBound == source.startIndex || source[source.index(before: found.lowerBound)] == "\n"
                let endsLine = found.upperBound == source.endIndex || source[found.upperBound] == "\n"
                if startsLine && endsLine { return found }
                searchStart = source.index(after: found.lowerBound)
            }
        }
        return nil
    }
}

import Foundation
import Testing

/// Only the engine takes an operation's or a queue's lock: the layers above call its named
/// steps, and read an operation's state through `_readState`. Checked on the sources, with
/// the scan of `EngineLayeringTests` (comments and string literals are not code).
@Suite("Layers: only the engine takes an operation's or a queue's lock")
struct EngineLockOwnershipTests {
    /// What takes one of the two locks: the state's `Locked` itself (`core.withLock`, or
    /// its mutex, on an `OperationQueue` or an `Operation`), and the engine's own sections
    /// (`_update`, `_withQueueLock`).
    static func takesLock(_ line: [UInt8]) -> Bool {
        let words = EngineLayeringTests.words(of: line).map(\.word)
        if words.contains("_update") || words.contains("_withQueueLock") { return true }
        let text = String(decoding: line, as: UTF8.self).filter { $0 != " " && $0 != "\t" }
        return ["core.withLock", "core?.withLock", "core.mutex", "core?.mutex"].contains { text.contains($0) }
    }

    static func scan() throws -> (files: Int, found: [String]) {
        var found: [String] = []
        var count = 0
        for folder in ["Sources/Operations"] + EngineLayeringTests.upperFolders {
            let files = EngineLayeringTests.swiftFiles(in: folder)
                .filter { !$0.path.contains("/Sources/Operations/Engine/") }
            count += files.count
            for file in files {
                for (number, line) in try EngineLayeringTests.code(of: file).enumerated() where takesLock(line) {
                    found.append("\(file.lastPathComponent):\(number + 1)")
                }
            }
        }
        return (count, found)
    }

    @Test("no source outside the engine takes an operation's or a queue's lock")
    func onlyTheEngineLocks() async throws {
        let (files, found) = try await onOwnThread { () throws -> (Int, [String]) in try Self.scan() }
        #expect(files > 60, "the sources were not found under \(EngineLayeringTests.root.path)")
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    @Test("the scan for lock sections finds each way to take one, and not a read or a comment")
    func scanFindsLockSections() throws {
        let sections = [
            "let x = _update { $0.phase }", "operation._update({ $0.name = nil })", "queue.core.withLock { $0.members }",
            "self.core .withLock { _ in }", "state.queue?.core?.withLock { _ in }",
            "queue._withQueueLock { $0.members }", "operation.core.mutex.withLock { $0.phase }",
        ]
        for line in sections {
            #expect(Self.takesLock(Array(line.utf8)), "not found: \(line)")
        }
        let others = [
            "let x = _readState { $0.phase }", "let y = _updateCount", "queue._snapshot.limit", "layerValues.withLock { $0 }",
            "try mutex.withLock(body)",
        ]
        for line in others {
            #expect(!Self.takesLock(Array(line.utf8)), "found: \(line)")
        }
        // A comment is not code.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("lock-scan-\(UUID()).swift")
        try "// core.withLock { } and _update { }\nlet a = 1 // _update\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try EngineLayeringTests.code(of: file).allSatisfy { !Self.takesLock($0) })
    }
}

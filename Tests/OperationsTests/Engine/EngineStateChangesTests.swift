import Foundation
import Testing

/// The layers above the engine ask an operation's state machine (`OperationCore`) for each
/// change through a method named for it, never by changing its fields: checked on the
/// sources, with the scan of `EngineLayeringTests`.
@Suite("Layers: an operation's state changes only through the engine's methods")
struct EngineStateChangesTests {
    /// The fields of `OperationCore` (and of its side box) that only the engine's methods
    /// change. Not listed, because other types of the layers have properties of the same
    /// names, which the scan cannot tell apart: `queue`, `queuePriority` and
    /// `qualityOfService` (set through `setQueuePriority` and `setQualityOfService`).
    static let machineFields: Set<String> = [
        "phase", "cancellation", "pendingDependencyCount", "readinessGeneration", "bandWhenAdded",
        "escalatedQuality", "dependencies", "hiddenDependencies",
        "dependencyIndex", "dependents", "finishWaiters", "extras", "gates", "handedOverAnnouncements",
        "finishingThread",
    ]

    /// Methods that change the value they are called on.
    static let mutatingMethods: Set<String> = [
        "append", "appendGrowingFromFour", "insert", "remove", "removeAll", "removeLast", "removeFirst",
        "removeSubrange", "replaceSubrange", "popLast", "popFirst", "swapAt", "sort", "reverse",
        "reserveCapacity", "toggle", "take", "formUnion", "formIntersection", "subtract", "update",
        "removeValue", "updateValue",
    ]

    static let assignments: [String] = [
        "=", "+=", "-=", "*=", "/=", "%=", "|=", "&=", "^=", "<<=", ">>=", "&+=", "&-=", "&*=",
    ]

    @Test("no source above the engine changes a field of an operation's state machine itself")
    func machineFieldsChangedOnlyByTheEngine() async throws {
        let (files, writes) = try await onOwnThread { () throws -> (Int, [String]) in try Self.scan() }
        #expect(files > 30, "the sources were not found under \(EngineLayeringTests.root.path)")
        #expect(writes.isEmpty, "\(writes.joined(separator: "\n"))")
    }

    @Test("the scan for changes of the state machine's fields finds each kind of change, and no read")
    func scanFindsEachKindOfChange() {
        let changes = [
            "state.phase = .idle", "state.phase\t= .idle", "core.pendingDependencyCount += 1",
            "state.readinessGeneration &+= 1", "state.dependents.append(x)", "$0.finishWaiters.removeAll { _ in true }",
            "swap(&state.phase, &other)", "let taken = Dependents(taking: &state.dependents)",
            "state.dependencies[0] = x", "state.extras?.gates.take()", "state.extras!.dependencyIndex = nil",
            "state.dependents.swapAt(0, 1)", "phase = .idle",
        ]
        for line in changes {
            #expect(!Self.writes(in: Array(line.utf8), bare: true).isEmpty, "not found: \(line)")
        }
        let reads = [
            "if state.phase == .idle {}", "let count = state.dependents.count", "state.phase.isFinishingOrFinished",
            "x = state.dependencies[0]", "if case .dependencies = reason {}", "state.phaseKind = 1", "phase == .idle",
            "state.dependents.first?.operation", "let a = state.finishWaiters.isEmpty", "guard state.phase != .idle",
        ]
        for line in reads {
            #expect(Self.writes(in: Array(line.utf8), bare: true).isEmpty, "found in a read: \(line)")
        }
    }

    /// The number of files read, and where a file of the `Operations` module outside the
    /// engine changes one of `machineFields`. In a file that extends `OperationCore`, a field
    /// named without a receiver counts too.
    static func scan() throws -> (files: Int, writes: [String]) {
        var found: [String] = []
        let files = EngineLayeringTests.swiftFiles(in: "Sources/Operations")
            .filter { !$0.path.contains("/Sources/Operations/Engine/") }
        for file in files {
            let lines = try EngineLayeringTests.code(of: file)
            let extendsCore = lines.contains { String(decoding: $0, as: UTF8.self).contains("extension OperationCore") }
            for (number, line) in lines.enumerated() {
                for field in writes(in: line, bare: extendsCore) {
                    found.append("\(file.lastPathComponent):\(number + 1) changes \(field)")
                }
            }
        }
        return (files.count, found)
    }

    /// The fields of `machineFields` that `line` changes: assigned (`=`, `+=`, …, also
    /// through a subscript), passed `inout` (`&`), or called a mutating method on (also
    /// through `?.` or `!.`). With `bare`, also a field named without a receiver.
    static func writes(in line: [UInt8], bare: Bool) -> [String] {
        var found: [String] = []
        var index = 0
        while index < line.count {
            guard EngineLayeringTests.isNamePart(line[index]) else { index += 1; continue }
            let start = index
            while index < line.count && EngineLayeringTests.isNamePart(line[index]) { index += 1 }
            let name = String(decoding: line[start..<index], as: UTF8.self)
            guard machineFields.contains(name) else { continue }
            let afterDot = start > 0 && line[start - 1] == UInt8(ascii: ".")
            // `.phase` after an expression (`state.phase`), not an enum case (`case .phase`, `= .phase`).
            let member = afterDot && start > 1 && (EngineLayeringTests.isNamePart(line[start - 2])
                || [UInt8(ascii: "?"), UInt8(ascii: "!"), UInt8(ascii: ")"), UInt8(ascii: "]")].contains(line[start - 2]))
            let alone = !afterDot && bare
            guard member || alone else { continue }
            if member && passedInout(line, memberAt: start) || changes(line, after: index) {
                found.append(name)
            }
        }
        return found
    }

    /// Whether the expression ending in the member that starts at `start` is preceded by `&`.
    static func passedInout(_ line: [UInt8], memberAt start: Int) -> Bool {
        var cursor = start - 1
        while cursor >= 0, EngineLayeringTests.isNamePart(line[cursor]) || line[cursor] == UInt8(ascii: ".")
            || line[cursor] == UInt8(ascii: "$") || line[cursor] == UInt8(ascii: "?") || line[cursor] == UInt8(ascii: "!") {
            cursor -= 1
        }
        return cursor >= 0 && line[cursor] == UInt8(ascii: "&")
    }

    /// Whether what follows a field at `end` changes it.
    static func changes(_ line: [UInt8], after end: Int) -> Bool {
        var cursor = end
        func skipSpaces() {
            while cursor < line.count, line[cursor] == UInt8(ascii: " ") || line[cursor] == UInt8(ascii: "\t") { cursor += 1 }
        }
        skipSpaces()
        // A subscript: what follows its closing bracket decides.
        if cursor < line.count, line[cursor] == UInt8(ascii: "[") {
            var depth = 0
            while cursor < line.count {
                if line[cursor] == UInt8(ascii: "[") { depth += 1 }
                if line[cursor] == UInt8(ascii: "]") { depth -= 1; if depth == 0 { cursor += 1; break } }
                cursor += 1
            }
            skipSpaces()
        }
        let rest = String(decoding: line[cursor...], as: UTF8.self)
        for assignment in assignments where rest.hasPrefix(assignment) {
            // `==`, `=>`-like operators and comparisons are reads.
            let next = rest.dropFirst(assignment.count).first
            if next != "=" { return true }
        }
        // A member call: `.name(`, `?.name`, `!.name`; a chain (`.extras?.gates.take()`)
        // changes the field when any mutating method is called along it.
        var chain = rest[...]
        while true {
            chain = chain.drop { $0 == "?" || $0 == "!" }
            guard chain.first == "." else { return false }
            chain = chain.dropFirst()
            let method = chain.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            if mutatingMethods.contains(String(method)) { return true }
            chain = chain.dropFirst(method.count)
            // Past a call's arguments or a subscript, the chain goes on.
            if chain.first == "(" || chain.first == "[" { return false }
        }
    }
}

import DifferentialPrograms
import Foundation

/// One implementation's differential executable, built by `swift test` beside the tests.
struct Implementation: Sendable {
    let name: String

    static let foundation = Implementation(name: "Foundation")
    static let operations = Implementation(name: "Operations")

    var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("DifferentialOn\(name)")
    }
}

/// What one implementation did with one program.
struct Outcome: Sendable {
    /// One transcript per completed run.
    var runs: [[String: String]] = []
    /// Why a run did not complete (a timeout, or the process ended), if one did not.
    var failure: String?
}

/// Runs the executables and reads what they print (see the interpreter's `Runner.swift`).
enum Harness {
    /// Runs `programs` `runs` times each on `implementation`. A run that times out or crashes
    /// ends that process; the programs after it run in a new one.
    static func run(
        _ programs: [String], on implementation: Implementation, runs: Int, timeout: Int, options: [String] = []
    ) throws -> [String: Outcome] {
        var outcomes: [String: Outcome] = [:]
        var pending = programs[...]
        while !pending.isEmpty {
            let (status, output, errors) = try execute(
                implementation, arguments: ["--runs", "\(runs)", "--timeout", "\(timeout)"] + options + pending)
            var current: String?
            // A run's lines count once its `end` line came.
            var runIsOpen = false
            for line in output.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("program ") {
                    current = String(line.dropFirst("program ".count))
                    outcomes[current!] = Outcome()
                } else if line.hasPrefix("run "), let current {
                    outcomes[current]!.runs.append([:])
                    runIsOpen = true
                } else if line.hasPrefix("end ") {
                    runIsOpen = false
                } else if line.hasPrefix("timeout "), let current {
                    outcomes[current]!.runs.removeLast()
                    runIsOpen = false
                    outcomes[current]!.failure = "timed out after \(timeout) s"
                } else if let tab = line.firstIndex(of: "\t"), let current {
                    outcomes[current]!.runs[outcomes[current]!.runs.count - 1][String(line[..<tab])] =
                        String(line[line.index(after: tab)...])
                }
            }
            // Every program done: an exit status now comes from the end of the process (a
            // sanitizer's report on Linux's Foundation, say), not from a program.
            if status == 0 || pending.allSatisfy({ outcomes[$0]?.runs.count == runs }) { break }
            guard let current, let position = pending.firstIndex(of: current) else {
                throw HarnessError(description: "\(implementation.name) exited with \(status) before any program:\n\(errors)")
            }
            if outcomes[current]!.failure == nil {
                if runIsOpen { outcomes[current]!.runs.removeLast() }
                outcomes[current]!.failure = "the process ended (status \(status)); standard error ends with:\n\(errors.suffix(2000))"
            }
            pending = pending[(position + 1)...]
        }
        return outcomes
    }

    struct HarnessError: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs the executable to the end; standard output and error go through files, so that
    /// neither can fill a pipe while the other is read.
    static func execute(_ implementation: Implementation, arguments: [String]) throws -> (Int32, String, String) {
        let directory = FileManager.default.temporaryDirectory
        let outputFile = directory.appendingPathComponent("differential-\(UUID().uuidString).out")
        let errorFile = directory.appendingPathComponent("differential-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outputFile)
            try? FileManager.default.removeItem(at: errorFile)
        }
        let process = Process()
        process.executableURL = implementation.executable
        process.arguments = arguments
        if implementation.name == Implementation.foundation.name {
            // Linux's Foundation crashes on some programs the generator cannot foresee; its
            // backtraces are not wanted, and symbolicating them takes time.
            var environment = ProcessInfo.processInfo.environment
            environment["SWIFT_BACKTRACE"] = "enable=no"
            process.environment = environment
        }
        process.standardOutput = try FileHandle(forWritingTo: outputFile)
        process.standardError = try FileHandle(forWritingTo: errorFile)
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, try read(outputFile), try read(errorFile))
    }

    /// Read through a file handle: `Data(contentsOf:)` leaks its buffer on this toolchain
    /// (LeakSanitizer finds it in FoundationEssentials' `readBytesFromFile`).
    static func read(_ file: URL) throws -> String {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        return String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
    }

    /// Runs both implementations at once (one process each).
    static func runBoth(
        _ programs: [String], foundationRuns: Int, operationsRuns: Int, timeout: Int, options: [String] = []
    ) throws -> (foundation: [String: Outcome], operations: [String: Outcome]) {
        let foundation = Locked<Result<[String: Outcome], any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let result = Result {
                try run(programs, on: .foundation, runs: foundationRuns, timeout: timeout, options: options)
            }
            foundation.set(result)
            done.signal()
        }
        let operations = try run(programs, on: .operations, runs: operationsRuns, timeout: timeout, options: options)
        done.wait()
        return (try foundation.get()!.get(), operations)
    }
}

/// A value handed between threads.
/// - Note: `@unchecked Sendable`: every access goes through `lock`.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
}

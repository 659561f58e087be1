import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A failed self-check: the benchmark exits non-zero.
struct CheckFailure: Error, CustomStringConvertible {
    let description: String
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw CheckFailure(description: message()) }
}

/// Records from many threads; used to check order and counts.
/// - Note: `@unchecked Sendable`: every access goes through `lock`.
final class Recorder: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int] = []

    init(capacity: Int) { values.reserveCapacity(capacity) }

    func record(_ value: Int) {
        lock.lock()
        values.append(value)
        lock.unlock()
    }

    var all: [Int] {
        lock.lock()
        defer { lock.unlock() }
        return values
    }
}

/// Counts from many threads.
/// - Note: `@unchecked Sendable`: every access goes through `lock`.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

#if canImport(Glibc)
let RUSAGE_SELF_WHO = RUSAGE_SELF.rawValue
#else
let RUSAGE_SELF_WHO = RUSAGE_SELF
#endif

/// The process's peak resident memory, in bytes.
func peakResidentBytes() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF_WHO, &usage)
    #if canImport(Darwin)
    return usage.ru_maxrss
    #else
    return usage.ru_maxrss * 1024
    #endif
}

/// Runs this executable again with `arguments` and returns what it printed.
func runChild(_ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

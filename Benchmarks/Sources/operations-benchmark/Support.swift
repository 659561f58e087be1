import AllocationCounter
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

/// The process's resident memory now, in bytes (Linux: /proc/self/statm). Not the peak
/// from getrusage: Linux carries a parent's peak into a child across execve.
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
}

/// Context switches of the whole process so far.
func contextSwitches() -> (voluntary: Int, involuntary: Int) {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return (usage.ru_nvcsw, usage.ru_nivcsw)
}

/// The process's threads now (Linux: /proc/self/status).
func threadCount() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") })
    else { return 0 }
    return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
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

/// Allocations made by the whole process so far (every thread), from the interposed
/// malloc & co. of the `AllocationCounter` target.
func allocationCount() -> UInt64 { allocation_counter_allocations() }

/// Checks that the allocation counter sees allocations: Swift objects made here, and
/// blocks that Dispatch copies on its own threads.
func checkAllocationCounter() throws {
    final class Probe { var value = 0 }
    let before = allocationCount()
    var probes: [Probe] = []
    probes.reserveCapacity(1_000)
    for index in 0..<1_000 {
        let probe = Probe()
        probe.value = index
        probes.append(probe)
    }
    let afterObjects = allocationCount()
    let group = DispatchGroup()
    for _ in 0..<100 { DispatchQueue.global().async(group: group) { _ = Probe() } }
    group.wait()
    let afterDispatch = allocationCount()
    withExtendedLifetime(probes) {}
    try check(allocation_counter_is_active() != 0, "allocation counter: malloc is not interposed")
    try check(afterObjects - before >= 1_000, "allocation counter: saw \(afterObjects - before) allocations for 1,000 objects")
    try check(afterDispatch - afterObjects >= 100, "allocation counter: saw \(afterDispatch - afterObjects) allocations for 100 Dispatch blocks")
}

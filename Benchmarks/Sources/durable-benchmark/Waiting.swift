// Waiting for many results: N operations drained by one worker process while this process
// awaits every handle's value, against the same drain with nobody waiting.

import Foundation
import OperationsDurable
import OperationsPostgres

#if canImport(Glibc)
import Glibc
#endif

/// This process's CPU time so far (user and system), in seconds.
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
}

/// One drain: seconds from spawning the worker process to the last value (or to the queue
/// being empty), and this process's CPU seconds meanwhile.
func waitedDrain(count: Int, awaiting: Bool, round: Int) async throws -> (seconds: Double, cpu: Double) {
    let name = "waiting_\(count)_\(awaiting ? "awaited" : "alone")_\(round)"
    let database = try await Database(kind: .postgres, name: name)
    let store = database.open(connections: 4)
    let queue = DurableQueue(name: processQueue, store: store)
    var batch = DurableBatch()
    var members: [DurableBatch.Member<Empty>] = []
    for index in 0..<count { members.append(try batch.add(Empty.self, input: index)) }
    let added = try await queue.addOperations(batch)
    let handles = members.map { added[$0] }
    let cpu = ownCPUSeconds()
    let started = ContinuousClock.now
    let worker = try ChildProcess(
        [ownExecutable(), "--worker-process", "\(port)", name, "default"], log: "\(directory)/\(name)-worker.log")
    if awaiting {
        let sum = try await withThrowingTaskGroup(of: Int.self) { group in
            for handle in handles { group.addTask { try await handle.value } }
            return try await group.reduce(0, +)
        }
        guard sum == count * (count - 1) / 2 else { throw BenchmarkError("the values added up to \(sum)") }
    } else {
        while try await queue.operationCount > 0 { try await Task.sleep(for: .milliseconds(10)) }
    }
    let elapsed = seconds(ContinuousClock.now - started)
    let used = ownCPUSeconds() - cpu
    try await waitForExit([worker], timeout: .seconds(60))
    await database.close()
    return (elapsed, used)
}

/// The section: for each N, a drain with every value awaited and one without, in turn.
func waitingForResults(counts: [Int], rounds: Int) async throws {
    print("\n## Waiting for results\n")
    print("N empty operations drained by one worker process (default concurrency); this process either awaits all N `value`s at once (a task group) or polls `operationCount` every 10 ms. Time from spawning the worker to the last value (or an empty queue); CPU: this process's user + system time meanwhile. \(rounds) rounds, in turn; medians\n")
    print("| N | drain s, nobody waiting | drain s, N values awaited | slower by | CPU s of the waiting process | CPU µs per awaited value |")
    print("|---:|---:|---:|---:|---:|---:|")
    for count in counts {
        var alone: [Double] = [], awaited: [Double] = [], cpu: [Double] = []
        for round in 0..<rounds {
            alone.append(try await waitedDrain(count: count, awaiting: false, round: round).seconds)
            let run = try await waitedDrain(count: count, awaiting: true, round: round)
            awaited.append(run.seconds)
            cpu.append(run.cpu)
        }
        let (a, w, c) = (median(alone), median(awaited), median(cpu))
        print("| \(count) | \(format(a, 2)) | \(format(w, 2)) | \(format((w / a - 1) * 100)) % | \(format(c, 2)) | \(format(c / Double(count) * 1_000_000)) |")
    }
}

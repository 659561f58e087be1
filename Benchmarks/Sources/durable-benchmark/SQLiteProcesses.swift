// The SQLite store drained by worker processes on one file: the same measurement as the
// comparison with pgqueuer, without a server.

import Foundation
import OperationsDurable
import OperationsSQLite

/// Pre-fills `count` empty operations in a fresh file, spawns 1 or 2 worker processes (this
/// executable, `--worker-process sqlite PATH default`) and times spawn → no unfinished
/// operation (read every 10 ms); `rounds` times, 1 and 2 processes in turn. Prints a table.
func sqliteWorkerProcesses(count: Int, rounds: Int) async throws {
    print("\n## SQLite, worker processes on one file\n")
    print("\(count) empty operations stored before each run in a fresh file (WAL, synchronous=FULL), then 1 or 2 worker processes with the default concurrency (\(DurableWorker.defaultConcurrency)) or 4, and with the default concurrency and synchronous=NORMAL (a commit survives a crash of the process, not of the machine); spawn → no unfinished operation; \(rounds) rounds, the rows in turn; medians (every run listed)\n")
    // A concurrency, and `normal` for the default one with synchronous=NORMAL.
    let settings = ["default", "4", "normal"]
    var runs: [String: [Double]] = [:]
    for round in 0..<rounds {
        for (setting, processes) in settings.flatMap({ setting in [1, 2].map { (setting, $0) } }) {
            let path = "\(directory)/sqlite-processes-\(round)-\(setting)-\(processes).sqlite"
            let store = SQLiteOperationStore(path: path)
            try await store.migrate()
            let queue = DurableQueue(name: processQueue, store: store)
            for start in stride(from: 0, to: count, by: 1_000) {
                try await queue.addOperations(Empty.self, inputs: Array(start..<min(count, start + 1_000)))
            }
            let started = ContinuousClock.now
            let children = try (0..<processes).map { index in
                try ChildProcess(
                    [ownExecutable(), "--worker-process", setting == "normal" ? "sqlite-normal" : "sqlite", path,
                     setting == "normal" ? "default" : setting], log: "\(directory)/sqlite-worker-\(index).log")
            }
            while try await store.unfinishedCount(queue: processQueue) > 0 {
                try await Task.sleep(for: .milliseconds(10))
            }
            runs["\(setting) \(processes)", default: []].append(Double(count) / seconds(ContinuousClock.now - started))
            try await waitForExit(children, timeout: .seconds(120))
            await store.shutdown()
        }
    }
    print("| concurrency | worker processes | operations/s (median) | runs |")
    print("|---|---:|---:|---|")
    for setting in settings {
        for processes in [1, 2] {
            let rates = runs["\(setting) \(processes)", default: []]
            let name =
                switch setting {
                case "default": "default (\(DurableWorker.defaultConcurrency))"
                case "normal": "default (\(DurableWorker.defaultConcurrency)), synchronous=NORMAL"
                default: setting
                }
            print("| \(name) | \(processes) | \(Int(median(rates))) | \(rates.map { String(Int($0)) }.joined(separator: ", ")) |")
        }
    }
}

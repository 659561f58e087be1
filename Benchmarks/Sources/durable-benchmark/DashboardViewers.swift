// Ten viewers beside the workers: worker processes drain pre-filled no-op operations while an
// OperationsDashboard in this process (refresh 1 s, the same store) serves 0 or 10 viewers,
// each doing what the page does in a browser: GET /api/overview once, then a WebSocket on
// /live read until the run ends. Runs alternate 0 and 10 viewers; SQLite, and PostgreSQL when
// its server binaries are found.

import Foundation
import OperationsDashboard
import OperationsDurable
import PostgresNIO
import SQLiteNIO
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

enum DashboardViewersBenchmark {
    static let viewerCount = 10
    static let refreshInterval: Duration = .seconds(1)

    /// One drain by the worker processes, with `viewers` viewers connected throughout.
    struct Run {
        var kind: StoreKind
        var round: Int
        var viewers: Int
        var count: Int
        /// From the first attempt's start to the last attempt's end (read from the store after the run).
        var workSeconds: Double
        /// From spawning the worker processes to the last one's exit.
        var spawnToExit: Double
        /// The sets of overview reads the dashboard made between the spawn and the exit.
        var overviewReads: Int
        /// The overviews the viewers received over their WebSockets in that time.
        var messages: Int
        /// Attempts recorded: more than `count` when a claim was given up and the operation run again.
        var attempts: Int
        /// Cores busy on the machine, of which the PostgreSQL server's and this process's
        /// (the dashboard and its viewers), on average between the spawn and the exit.
        var busyCores: Double
        var serverCores: Double
        var ownCores: Double

        var perSecond: Double { Double(count) / workSeconds }
    }

    /// The mode: starts the cluster when PostgreSQL's binaries are found, runs, stops it.
    /// Returns the exit status.
    static func main(rounds: Int, processes: Int, quick: Bool) async -> Int32 {
        let postgres = FileManager.default.isExecutableFile(atPath: "\(binaries)/initdb")
        if postgres {
            startCluster()
        } else {
            print("PostgreSQL's server binaries are missing (\(binaries)): SQLite only")
            shell("mkdir -p \(directory)")
        }
        var status: Int32 = 0
        do {
            let counts: [StoreKind: Int] = [.sqlite: quick ? 3_000 : 30_000, .postgres: quick ? 10_000 : 60_000]
            try await run(postgres ? [.sqlite, .postgres] : [.sqlite], counts: counts, rounds: rounds, processes: processes)
        } catch {
            print("the dashboard viewers benchmark failed: \(error)")
            status = 1
        }
        if postgres { stopCluster() } else { shell("rm -rf \(directory)") }
        return status
    }

    static func run(_ kinds: [StoreKind], counts: [StoreKind: Int], rounds: Int, processes: Int) async throws {
        let date = ISO8601DateFormatter.string(from: Date(), timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withInternetDateTime])
        var server = ""
        if kinds.contains(.postgres) {
            let admin = try await connect()
            server = "; PostgreSQL " + (try await admin.query("SHOW server_version", logger: logger).collect()[0].decode(String.self)) + " (fsync on)"
            try await admin.close()
        }
        print("\n## Ten viewers beside the workers\n")
        print("\(date); \(ProcessInfo.processInfo.activeProcessorCount) cores; Linux \(kernelRelease()); load average at the start \(loadAverage())\(server)\n")
        print(
            """
            Per store, N no-op operations stored in a fresh database, then \(processes) worker process\(processes == 1 ? "" : "es") \
            (this executable with `--worker-process`: one DurableWorker at the default concurrency, \(DurableWorker.defaultConcurrency)) \
            drain them. An OperationsDashboard in this process (refresh \(refreshInterval), 127.0.0.1, its own store on the same \
            database) serves throughout; with 10 viewers, each did GET /api/overview and opened a WebSocket on /live before the \
            spawn, and reads every overview pushed until the workers exit. Throughput: N / (first attempt's start → last attempt's \
            end), read from the store afterwards. Runs alternate 0 and 10 viewers, \(rounds) rounds; medians.

            """)
        var runs: [Run] = []
        for kind in kinds {
            for round in 0..<rounds {
                for viewers in [0, viewerCount] {
                    runs.append(try await drain(kind, count: counts[kind] ?? 10_000, viewers: viewers, round: round, processes: processes))
                }
            }
        }
        print("| store | N | ops/s, 0 viewers | ops/s, 10 viewers | 10 / 0 (medians) | 10 / 0 in each round | overview reads per 10-viewer run | runs, 0 viewers | runs, 10 viewers |")
        print("|---|---:|---:|---:|---:|---|---:|---|---|")
        for kind in kinds {
            let none = runs.filter { $0.kind == kind && $0.viewers == 0 }, ten = runs.filter { $0.kind == kind && $0.viewers == viewerCount }
            let zero = median(none.map(\.perSecond)), loaded = median(ten.map(\.perSecond))
            let ratios = zip(none, ten).map { $1.perSecond / $0.perSecond }
            let pairs = "median \(format(median(ratios), 3)): " + ratios.map { format($0, 3) }.joined(separator: ", ")
            print(
                "| \(kind.rawValue) | \(counts[kind] ?? 0) | \(format(zero)) | \(format(loaded)) | \(format(loaded / zero, 3)) | \(pairs) | \(ten.map { String($0.overviewReads) }.joined(separator: ", ")) | \(none.map { format($0.perSecond) }.joined(separator: ", ")) | \(ten.map { format($0.perSecond) }.joined(separator: ", ")) |"
            )
        }
        let cores = ProcessInfo.processInfo.activeProcessorCount
        print("\nEvery run (cores: averages between the spawn and the last exit; this process = the dashboard and its viewers):\n")
        print("| store | round | viewers | first start → last end s | ops/s | spawn → exit s | attempts | overview reads | overviews received | cores busy (of \(cores)) | PostgreSQL | this process |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for run in runs {
            print(
                "| \(run.kind.rawValue) | \(run.round + 1) | \(run.viewers) | \(format(run.workSeconds, 2)) | \(format(run.perSecond)) | \(format(run.spawnToExit, 2)) | \(run.attempts) | \(run.overviewReads) | \(run.messages) | \(format(run.busyCores, 2)) | \(run.kind == .postgres ? format(run.serverCores, 2) : "—") | \(format(run.ownCores, 3)) |"
            )
        }
        print("\nLoad average at the end \(loadAverage())")
    }

    /// Fills a fresh database, starts the dashboard and `viewers` viewers, spawns the worker
    /// processes and waits for them to exit.
    static func drain(_ kind: StoreKind, count: Int, viewers: Int, round: Int, processes: Int) async throws -> Run {
        let name = "viewers_\(viewers)_\(round)"
        let database = try await Database(kind: kind, name: name)
        _ = try await independent(count)(DurableQueue(name: processQueue, store: database.open(connections: 2)))
        await database.close()
        if kind == .postgres {
            // Every run starts right after a checkpoint: the same full-page writes, none mid-run.
            let admin = try await connect()
            try await admin.query("CHECKPOINT", logger: logger)
            try await admin.close()
        }
        guard let inspected = database.open(connections: 2) as? any DurableStoreInspection else {
            throw BenchmarkError("\(kind.rawValue) store does not implement DurableStoreInspection")
        }
        let dashboard = OperationsDashboard(
            store: inspected, storeName: kind.rawValue, configuration: .init(port: 0, refreshInterval: refreshInterval))
        let url = try await dashboard.start()
        var connected: [LiveViewer] = []
        var children: [ChildProcess] = []
        do {
            for _ in 0..<viewers {
                // The page reads the overview once, then listens.
                let (_, response) = try await URLSession.shared.data(from: url.appendingPathComponent("api/overview"))
                guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw BenchmarkError("GET /api/overview: \(response)") }
                connected.append(LiveViewer(port: url.port ?? 0))
            }
            let deadline = ContinuousClock.now + .seconds(15)
            while connected.contains(where: { $0.messages == 0 }) {
                if let failure = connected.compactMap(\.failure).first { throw BenchmarkError("a viewer failed: \(failure)") }
                guard ContinuousClock.now < deadline else { throw BenchmarkError("a viewer got no overview within 15 s") }
                try await Task.sleep(for: .milliseconds(10))
            }
            let readsBefore = await dashboard.refreshes
            let messagesBefore = connected.map(\.messages).reduce(0, +)
            let cpuBefore = cpuSample(), serverBefore = serverCPU(), ownBefore = ownCPU()
            let started = ContinuousClock.now
            let worker = [ownExecutable(), "--worker-process", kind == .postgres ? "\(port)" : "sqlite", kind == .postgres ? name : database.path, "default"]
            children = try (0..<processes).map { try ChildProcess(worker, log: "\(directory)/\(name)-worker-\($0).log") }
            try await waitForExit(children, timeout: .seconds(300))
            let elapsed = seconds(ContinuousClock.now - started)
            let cpuAfter = cpuSample(), serverAfter = serverCPU(), ownAfter = ownCPU()
            let reads = await dashboard.refreshes - readsBefore
            let messages = connected.map(\.messages).reduce(0, +) - messagesBefore
            if let failure = connected.compactMap(\.failure).first { throw BenchmarkError("a viewer failed: \(failure)") }
            for viewer in connected { try viewer.checkLastOverview() }
            for viewer in connected { await viewer.close() }
            await dashboard.stop()
            await database.close()
            let (attempts, workSeconds) = try await firstStartToLastEnd(database, count: count)
            return Run(
                kind: kind, round: round, viewers: viewers, count: count, workSeconds: workSeconds, spawnToExit: elapsed,
                overviewReads: reads, messages: messages, attempts: attempts, busyCores: (cpuAfter.busy - cpuBefore.busy) / elapsed,
                serverCores: (serverAfter - serverBefore) / elapsed, ownCores: (ownAfter - ownBefore) / elapsed)
        } catch {
            for child in children where child.status == nil { kill(child.pid, SIGKILL) }
            try? await waitForExit(children, timeout: .seconds(10))
            for viewer in connected { await viewer.close() }
            await dashboard.stop()
            await database.close()
            throw error
        }
    }

    /// The attempts recorded, and the seconds from the first one's start to the last one's
    /// end; checks that every operation succeeded.
    static func firstStartToLastEnd(_ database: Database, count: Int) async throws -> (attempts: Int, seconds: Double) {
        let (attempts, span, succeeded): (Int, Double, Int)
        switch database.kind {
        case .postgres:
            let connection = try await connect(database.name)
            let rows = try await connection.query(
                """
                SELECT count(*)::bigint, extract(epoch FROM max(ended_at) - min(started_at))::float8,
                    (SELECT count(*) FROM durable_operations WHERE state = 'succeeded')::bigint
                FROM durable_attempts
                """, logger: logger
            ).collect()
            try await connection.close()
            let (found, seconds, done) = try rows[0].decode((Int64, Double, Int64).self)
            (attempts, span, succeeded) = (Int(found), seconds, Int(done))
        case .sqlite:
            let connection = try await SQLiteConnection.open(storage: .file(path: database.path))
            let rows = try await connection.query(
                """
                SELECT count(*) AS n, max(ended_at) - min(started_at) AS span,
                    (SELECT count(*) FROM durable_operations WHERE state = 'succeeded') AS done
                FROM durable_attempts
                """)
            try await connection.close()
            let row = rows[0]
            (attempts, span, succeeded) = (Int(row.column("n")?.integer ?? 0), row.column("span")?.double ?? .nan, Int(row.column("done")?.integer ?? 0))
        }
        guard succeeded == count else { throw BenchmarkError("\(succeeded) of \(count) operations succeeded") }
        return (attempts, span)
    }

    /// CPU seconds this benchmark's cluster used so far: its postmaster's, with the backends
    /// it reaped (`cutime`, `cstime`), and its running children's. Another cluster on the
    /// machine is left out, and so is no backend that ended during the run.
    static func serverCPU() -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        guard let pidFile = try? String(contentsOfFile: "\(directory)/data/postmaster.pid", encoding: .utf8),
            let postmaster = pidFile.split(separator: "\n").first.map(String.init)
        else { return .nan }
        var total = 0.0
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where entry.allSatisfy(\.isNumber) {
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After the name: state, ppid, …; utime, stime, cutime, cstime are fields 14–17.
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ").map(String.init)
            guard fields.count > 14, entry == postmaster || fields[1] == postmaster else { continue }
            let times = fields[11...14].compactMap(Double.init)
            total += (entry == postmaster ? times.reduce(0, +) : times[0] + times[1]) / ticks
        }
        return total
    }

    /// CPU seconds this process used so far (user and system).
    static func ownCPU() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let time = { (value: timeval) in Double(value.tv_sec) + Double(value.tv_usec) * 1e-6 }
        return time(usage.ru_utime) + time(usage.ru_stime)
    }

    /// The 1, 5 and 15 minute load averages, as `uptime` prints them.
    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }
}

/// A WebSocket client on `/live`, reading every message, as a browser's page does. Its
/// reads block, on a thread of its own: the cooperative pool has one thread per core, and
/// the dashboard it measures runs there.
final class LiveViewer: Sendable {
    private struct State {
        var messages = 0
        var last = ""
        var failure: String?
        var socket: Int32 = -1
        var stopping = false
        var ended = false
    }

    private let state = Mutex(State())

    init(port: Int) {
        Thread { [self] in read(port: port) }.start()
    }

    /// The messages received so far.
    var messages: Int { state.withLock { $0.messages } }
    /// Why the connection ended before `close()`, if it did.
    var failure: String? { state.withLock { $0.failure } }

    /// Throws unless the last message is an overview of the store without an error.
    func checkLastOverview() throws {
        let text = state.withLock { $0.last }
        let overview = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        guard let store = overview?["store"] as? [String: Any] else { throw BenchmarkError("not an overview of a store: \(text.prefix(200))") }
        if let error = store["error"] as? String { throw BenchmarkError("the overview reports an error: \(error)") }
    }

    /// Ends the connection and waits for the reading thread to end.
    func close() async {
        state.withLock { state in
            state.stopping = true
            // The thread closes the socket, under the same lock: shut down only one still open.
            if state.socket >= 0 { shutdown(state.socket, Int32(SHUT_RDWR)) }
        }
        while !state.withLock({ $0.ended }) { try? await Task.sleep(for: .milliseconds(5)) }
    }

    private func read(port: Int) {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let open = state.withLock { state in
            if state.stopping { return false }
            state.socket = socket
            return true
        }
        if open {
            do {
                try converse(socket, port: port)
            } catch {
                state.withLock { if !$0.stopping { $0.failure = "\(error)" } }
            }
        }
        state.withLock { state in
            Glibc.close(socket)
            state.socket = -1
            state.ended = true
        }
    }

    private func converse(_ socket: Int32, port: Int) throws {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw BenchmarkError("connect: \(String(cString: strerror(errno)))") }
        var connection = FrameConnection(socket: socket)
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        try connection.send(Array(
            "GET /live HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: http://127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8))
        let head = try connection.readHead()
        guard head.hasPrefix("HTTP/1.1 101") else { throw BenchmarkError("no upgrade: \(head.prefix(200))") }
        var message: [UInt8] = []
        while true {
            let frame = try connection.readFrame()
            switch frame.opcode {
            case 0x0, 0x1, 0x2:
                message += frame.payload
                if frame.final {
                    let text = String(decoding: message, as: UTF8.self)
                    message = []
                    state.withLock {
                        $0.messages += 1
                        $0.last = text
                    }
                }
            case 0x8:
                try? connection.sendFrame(opcode: 0x8, payload: [])
                return
            case 0x9:
                try connection.sendFrame(opcode: 0xA, payload: frame.payload)
            default:
                break
            }
        }
    }
}

/// Reads HTTP and WebSocket frames from a blocking socket, writes masked client frames.
private struct FrameConnection {
    let socket: Int32
    private var buffer: [UInt8] = []
    private var start = 0

    init(socket: Int32) {
        self.socket = socket
    }

    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw BenchmarkError("send: \(String(cString: strerror(errno)))") }
            sent += written
        }
    }

    /// A client frame: masked, as the protocol requires of clients.
    func sendFrame(opcode: UInt8, payload: [UInt8]) throws {
        precondition(payload.count < 126, "only control frames are sent")
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        let masked = payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try send([0x80 | opcode, 0x80 | UInt8(payload.count)] + mask + masked)
    }

    /// Reads more into the buffer; throws at the end of the stream.
    private mutating func fill() throws {
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
        }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw BenchmarkError(count == 0 ? "the connection was closed" : "recv: \(String(cString: strerror(errno)))") }
        buffer += chunk[..<count]
    }

    private mutating func take(_ count: Int) throws -> [UInt8] {
        while buffer.count - start < count { try fill() }
        defer { start += count }
        return Array(buffer[start..<(start + count)])
    }

    /// The response's status line and headers.
    mutating func readHead() throws -> String {
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        while true {
            if let range = buffer[start...].firstRange(of: end) {
                defer { start = range.upperBound }
                return String(decoding: buffer[start..<range.lowerBound], as: UTF8.self)
            }
            try fill()
        }
    }

    mutating func readFrame() throws -> (final: Bool, opcode: UInt8, payload: [UInt8]) {
        let head = try take(2)
        var length = Int(head[1] & 0x7f)
        if length == 126 {
            length = try take(2).reduce(0) { $0 << 8 | Int($1) }
        } else if length == 127 {
            length = try take(8).reduce(0) { $0 << 8 | Int($1) }
        }
        let mask = head[1] & 0x80 != 0 ? try take(4) : []
        var payload = try take(length)
        if !mask.isEmpty {
            for index in payload.indices { payload[index] ^= mask[index % 4] }
        }
        return (head[0] & 0x80 != 0, head[0] & 0x0f, payload)
    }
}

import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Screenshots of web pages with a headless Chromium, when one is installed (the tour runs
/// without it and says so). Chromium is driven over the DevTools protocol on a pair of pipes
/// (`--remote-debugging-pipe`: it reads commands from its descriptor 3 and writes answers to
/// its descriptor 4, each message ended by a NUL byte), so that a page is photographed when
/// it says it is ready, not after a guessed delay.
final class Screenshots {
    static let notFound =
        "no Chromium found (OPERATIONS_CHROMIUM, else chromium, chromium-browser or google-chrome on PATH); on Debian: apt-get install -y chromium"

    /// OPERATIONS_CHROMIUM (a path or a name on PATH), else the usual names on PATH.
    static func findChromium() -> String? {
        let environment = ProcessInfo.processInfo.environment
        let names = environment["OPERATIONS_CHROMIUM"].flatMap { $0.isEmpty ? nil : [$0] }
            ?? ["chromium", "chromium-browser", "google-chrome"]
        let path = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
        for name in names {
            if name.contains("/") {
                if FileManager.default.isExecutableFile(atPath: name) { return name }
                continue
            }
            for folder in path where FileManager.default.isExecutableFile(atPath: "\(folder)/\(name)") {
                return "\(folder)/\(name)"
            }
        }
        return nil
    }

    private let executable: String
    private let pid: pid_t
    /// This end of the socket pair: commands out, answers in.
    private let socket: Int32
    private let profile: URL
    private var received: [UInt8] = []
    private var nextID = 0
    /// How long one answer, or a page's readiness, may take: Chromium answers in milliseconds.
    private let bound: Duration = .seconds(60)

    /// Starts a headless Chromium with a throwaway profile.
    init(executable: String) throws {
        self.executable = executable
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("operations-tour-chromium-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        // One socket pair, Chromium's end as both its descriptors 3 and 4 (a socket, not
        // pipes: writing to a Chromium that died is an error here, not SIGPIPE for the tour).
        var pair: [Int32] = [-1, -1]
        #if os(Linux)
        let made = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair)
        #else
        let made = socketpair(AF_UNIX, SOCK_STREAM, 0, &pair)
        for descriptor in pair { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var on: Int32 = 1
        _ = setsockopt(pair[0], SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        #endif
        guard made == 0 else {
            try? FileManager.default.removeItem(at: profile)
            throw Self.error("cannot make a socket pair: \(String(cString: strerror(errno)))")
        }
        // Chromium's end above 4, so that moving it to 3 and 4 cannot overwrite it first; it is
        // closed at exec, as is ours (dup2 clears close-on-exec on 3 and 4 only).
        let theirs = fcntl(pair[1], F_DUPFD_CLOEXEC, 10)
        close(pair[1])
        socket = pair[0]
        defer { close(theirs) }

        let arguments = [
            executable, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--user-data-dir=\(profile.path)", "--remote-debugging-pipe", "about:blank",
        ]
        // Its crash reports and caches go to the throwaway profile, not the user's home.
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = profile.path + "/config"
        environment["XDG_CACHE_HOME"] = profile.path + "/cache"
        environment["BREAKPAD_DUMP_LOCATION"] = profile.path + "/crashpad"
        let (pid, status) = spawn(
            arguments, environment: environment, log: profile.appendingPathComponent("chromium.log").path
        ) { actions in
            posix_spawn_file_actions_adddup2(&actions, theirs, 3)
            posix_spawn_file_actions_adddup2(&actions, theirs, 4)
        }
        guard status == 0 else {
            close(socket)
            try? FileManager.default.removeItem(at: profile)
            throw Self.error("cannot start \(executable): \(String(cString: strerror(status)))")
        }
        self.pid = pid
    }

    deinit {
        // Asked to close; a Chromium that does not is killed. Closing the socket ends its
        // pipe of commands, which also ends it.
        _ = try? send("Browser.close", bound: .seconds(2))
        close(socket)
        var status: Int32 = 0
        let deadline = ContinuousClock.now + .seconds(5)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if ContinuousClock.now > deadline {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
                break
            }
            usleep(20_000)
        }
        try? FileManager.default.removeItem(at: profile)
    }

    /// Opens `page` in a new 1280×900 tab, waits until `ready` (a JavaScript expression)
    /// is true, and writes a PNG of the tab to `file`.
    func take(of page: URL, when ready: String, to file: URL) throws {
        let target = try send("Target.createTarget", ["url": "about:blank"])["targetId"] as? String ?? ""
        let session = try send("Target.attachToTarget", ["targetId": target, "flatten": true])["sessionId"] as? String
        guard let session else { throw Self.error("Chromium attached to no tab") }
        defer { _ = try? send("Target.closeTarget", ["targetId": target]) }
        _ = try send("Emulation.setDeviceMetricsOverride", ["width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false], session: session)
        let navigation = try send("Page.navigate", ["url": page.absoluteString], session: session)
        if let failure = navigation["errorText"] as? String, !failure.isEmpty { throw Self.error("\(page): \(failure)") }
        let deadline = ContinuousClock.now + bound
        while true {
            let answer = try send("Runtime.evaluate", ["expression": "Boolean(\(ready))", "returnByValue": true], session: session)
            if (answer["result"] as? [String: Any])?["value"] as? Bool == true { break }
            guard ContinuousClock.now < deadline else { throw Self.error("\(page) was not ready (\(ready)) within \(bound)") }
            usleep(50_000)
        }
        let shot = try send("Page.captureScreenshot", ["format": "png"], session: session)
        guard let base64 = shot["data"] as? String, let png = Data(base64Encoded: base64) else { throw Self.error("no screenshot of \(page)") }
        try png.write(to: file)
    }

    /// Sends a command and returns its result, skipping the events Chromium sends meanwhile.
    private func send(
        _ method: String, _ parameters: [String: Any] = [:], session: String? = nil, bound: Duration? = nil
    ) throws -> [String: Any] {
        nextID += 1
        var message: [String: Any] = ["id": nextID, "method": method, "params": parameters]
        if let session { message["sessionId"] = session }
        var bytes = [UInt8](try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        var written = 0
        while written < bytes.count {
            #if os(Linux)
            let count = bytes[written...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            #else
            let count = bytes[written...].withUnsafeBytes { write(socket, $0.baseAddress, $0.count) }
            #endif
            guard count > 0 else { throw Self.error("Chromium stopped reading (\(String(cString: strerror(errno)))); \(recentOutput())") }
            written += count
        }
        let deadline = ContinuousClock.now + (bound ?? self.bound)
        while true {
            let answer = try nextMessage(deadline: deadline)
            guard answer["id"] as? Int == nextID else { continue }
            if let failure = answer["error"] as? [String: Any] { throw Self.error("\(method): \(failure["message"] ?? failure)") }
            return answer["result"] as? [String: Any] ?? [:]
        }
    }

    private func nextMessage(deadline: ContinuousClock.Instant) throws -> [String: Any] {
        while true {
            if let end = received.firstIndex(of: 0) {
                let message = Array(received[..<end])
                received.removeFirst(end + 1)
                return try JSONSerialization.jsonObject(with: Data(message)) as? [String: Any] ?? [:]
            }
            var ready = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw Self.error("Chromium did not answer within \(bound); \(recentOutput())") }
            let milliseconds = Int32(max(10, min(left.components.seconds * 1000 + 1, 1000)))
            guard poll(&ready, 1, milliseconds) >= 0 || errno == EINTR else { throw Self.error("poll: \(String(cString: strerror(errno)))") }
            guard ready.revents != 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
            guard count > 0 else { throw Self.error("Chromium closed its pipe; \(recentOutput())") }
            received += chunk[..<count]
        }
    }

    private func recentOutput() -> String {
        let text = (try? String(contentsOf: profile.appendingPathComponent("chromium.log"), encoding: .utf8)) ?? ""
        return "it printed: \(text.suffix(800))"
    }

    private static func error(_ reason: String) -> TourError {
        TourError.badResponse(url: "headless Chromium", reason: reason)
    }
}

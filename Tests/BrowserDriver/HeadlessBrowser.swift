// A headless Chromium driven over the Chrome DevTools Protocol, for end-to-end tests of web
// pages: launch, open a page, wait for a condition, read the DOM, click, fill, screenshot, and
// collect the page's uncaught exceptions and console errors.
//
//     try await HeadlessBrowser.with { browser in          // launch; close() on every path
//         let page = try await browser.open("http://127.0.0.1:8080/")
//         try await page.waitFor(selector: "#items li")      // or any JS expression
//         let rows = try await page.texts(of: "#items li")
//         try await page.fill("#name", with: "Ada")
//         try await page.click("#send")
//         try await page.waitFor("document.querySelector('#result').textContent !== ''")
//         try await page.screenshot(to: "/tmp/page.png", width: 1024, height: 768)
//         #expect(page.errors().isEmpty, "\(page.errors())")
//     }
//
// Chromium is found through the environment variable OPERATIONS_CHROMIUM (a path or a name on
// PATH), else as `chromium`, `chromium-browser` or `google-chrome` on PATH. On Debian:
// `apt-get install -y chromium`.
//
// Processes: Chromium is started in a process group of its own. `close()` asks it to quit
// (Browser.close), then kills the whole group with SIGKILL and waits; `deinit` of a browser
// that was not closed kills the group without waiting. A reader thread drains Chromium's
// output, notices when every process that held it has ended, reaps the browser process and
// removes the temporary profile directory. A test process that is itself killed with SIGKILL
// cannot clean up: its Chromium then lives on.

#if Dashboard
import Foundation
@_spi(Engine) import Operations
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Browser

public final class HeadlessBrowser: Sendable {
    /// Options for `launch`. The defaults suit tests on a small Linux machine.
    public struct LaunchOptions: Sendable {
        /// A path, or a name looked up on PATH. Nil: OPERATIONS_CHROMIUM, else chromium,
        /// chromium-browser, google-chrome.
        public var executable: String?
        /// The viewport of every new page (CSS pixels, scale 1), until `setViewport`. (The
        /// window itself would give a page less: headless windows keep room for toolbars.)
        public var viewportWidth = 1280
        public var viewportHeight = 800
        /// Appended after the driver's own flags.
        public var extraArguments: [String] = []
        /// How long Chromium may take to print its DevTools URL and accept the connection.
        public var launchTimeout: Duration = .seconds(30)
        /// The limit for each DevTools command that has no limit of its own.
        public var commandTimeout: Duration = .seconds(30)

        public init() {}
    }

    /// The executable that was started.
    public let executable: String
    /// The DevTools WebSocket URL Chromium printed.
    public let devToolsURL: String
    let connection: CDPConnection
    let commandTimeout: Duration
    let viewport: (width: Int, height: Int)
    private let process: ChromiumProcess
    private let isClosed = Locked(false)

    private init(
        executable: String, process: ChromiumProcess, connection: CDPConnection, options: LaunchOptions
    ) {
        self.executable = executable
        self.process = process
        self.connection = connection
        self.devToolsURL = connection.endpoint
        self.commandTimeout = options.commandTimeout
        self.viewport = (options.viewportWidth, options.viewportHeight)
    }

    /// The browser process's id, which is also the id of its process group.
    public var processID: Int32 { process.pid }
    /// The temporary profile directory; removed once Chromium has exited.
    public var userDataDirectory: String { process.userDataDirectory }

    /// Starts a headless Chromium and connects to it.
    public static func launch(_ options: LaunchOptions = LaunchOptions()) async throws -> HeadlessBrowser {
        let executable = try findChromium(options.executable)
        let profile = try makeTemporaryDirectory(prefix: "headless-chromium-")
        let arguments = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--remote-debugging-port=0",
            "--remote-debugging-address=127.0.0.1",
            "--user-data-dir=\(profile)",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-background-timer-throttling",
            "--disable-backgrounding-occluded-windows",
            "--disable-renderer-backgrounding",
            "--password-store=basic",
            "--mute-audio",
            "--hide-scrollbars",
            "--window-size=\(options.viewportWidth),\(options.viewportHeight + 200)",
        ] + options.extraArguments + ["about:blank"]

        let process: ChromiumProcess
        do {
            // Everything Chromium writes goes below the profile, which is removed afterwards:
            // its crash database (else ~/.config/chromium/Crash Reports) and XDG config/cache.
            var environment = ProcessInfo.processInfo.environment
            environment["BREAKPAD_DUMP_LOCATION"] = profile + "/crashpad"
            environment["XDG_CONFIG_HOME"] = profile + "/xdg-config"
            environment["XDG_CACHE_HOME"] = profile + "/xdg-cache"
            process = try ChromiumProcess.spawn(
                executable: executable, arguments: arguments, environment: environment, userDataDirectory: profile
            )
        } catch {
            try? FileManager.default.removeItem(atPath: profile)
            throw error
        }
        do {
            let webSocketURL: String
            do {
                webSocketURL = try await withTimeout(options.launchTimeout) { try await process.devToolsURL.value() }
            } catch is DeadlineExceeded {
                throw BrowserError(.launch, "\(executable) printed no DevTools URL within \(options.launchTimeout). Its output:\n\(process.recentOutput())")
            }
            let connection = try await CDPConnection.connect(to: webSocketURL, timeout: options.launchTimeout)
            return HeadlessBrowser(executable: executable, process: process, connection: connection, options: options)
        } catch {
            process.killGroup()
            _ = try? await withTimeout(.seconds(10)) { try await process.exited.value() }
            throw error
        }
    }

    /// Launches a browser, runs `body` with it, and closes it whether `body` succeeds or throws.
    public static func with<R>(
        _ options: LaunchOptions = LaunchOptions(),
        isolation: isolated (any Actor)? = #isolation,
        _ body: (HeadlessBrowser) async throws -> R
    ) async throws -> R {
        let browser = try await launch(options)
        let result: R
        do {
            result = try await body(browser)
        } catch {
            try? await browser.close()
            throw error
        }
        try await browser.close()
        return result
    }

    /// Opens a new page (a new window, so that several pages all render) and navigates it to
    /// `url`, returning once the page's load event has fired. Errors and console messages of
    /// the page are collected from before the navigation starts.
    public func open(_ url: String, timeout: Duration = .seconds(60)) async throws -> Page {
        let created = try await connection.send(
            "Target.createTarget", ["url": "about:blank", "newWindow": true], timeout: commandTimeout
        )
        guard let targetID = created["targetId"]?.stringValue else {
            throw BrowserError(.protocolError, "Target.createTarget returned no targetId: \(created)")
        }
        let attached = try await connection.send(
            "Target.attachToTarget", ["targetId": .string(targetID), "flatten": true], timeout: commandTimeout
        )
        guard let sessionID = attached["sessionId"]?.stringValue else {
            throw BrowserError(.protocolError, "Target.attachToTarget returned no sessionId: \(attached)")
        }
        let page = Page(browser: self, targetID: targetID, sessionID: sessionID)
        do {
            for method in ["Page.enable", "Runtime.enable", "Log.enable", "Inspector.enable"] {
                try await page.send(method)
            }
            try await page.send("Page.setLifecycleEventsEnabled", ["enabled": true])
            try await page.setViewport(width: viewport.width, height: viewport.height)
            try await page.goto(url, timeout: timeout)
        } catch {
            try? await page.close()
            throw error
        }
        return page
    }

    /// Kills Chromium (its whole process group) and waits until every process that shared its
    /// output has ended, the browser process is reaped and the profile directory is removed.
    /// Safe to call more than once.
    public func close() async throws {
        isClosed.withLock { $0 = true }
        if !process.exited.isResolved {
            // Graceful first: Chromium then ends and reaps its own helper processes, so none
            // is left as a zombie for init to collect. The reply may never come (it exits).
            _ = try? await connection.send("Browser.close", timeout: .seconds(2))
            _ = try? await withTimeout(.seconds(5)) { try await self.process.exited.value() }
        }
        connection.close()
        process.killGroup()
        do {
            _ = try await withTimeout(.seconds(20)) { try await self.process.exited.value() }
        } catch is DeadlineExceeded {
            throw BrowserError(.launch, "Chromium (pid \(process.pid)) had not ended 20 s after SIGKILL to its process group")
        }
    }

    deinit {
        // Not closed by the test (a failure path): kill without waiting; the reader thread
        // reaps the process and removes the profile directory.
        if !isClosed.withLock({ $0 }) {
            connection.close()
            process.killGroup()
        }
    }

    /// Whether a Chromium would be found (a test suite may be skipped without one).
    public static var isInstalled: Bool { (try? findChromium(nil)) != nil }

    private static func findChromium(_ explicit: String?) throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let candidates: [String]
        if let explicit {
            candidates = [explicit]
        } else if let configured = environment["OPERATIONS_CHROMIUM"], !configured.isEmpty {
            candidates = [configured]
        } else {
            candidates = ["chromium", "chromium-browser", "google-chrome"]
        }
        let searchPath = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
        for candidate in candidates {
            if candidate.contains("/") {
                if access(candidate, X_OK) == 0 { return candidate }
                continue
            }
            for directory in searchPath where !directory.isEmpty {
                let path = directory + "/" + candidate
                if access(path, X_OK) == 0 { return path }
            }
        }
        throw BrowserError(.launch, "no Chromium found (tried \(candidates.joined(separator: ", ")); set OPERATIONS_CHROMIUM or `apt-get install -y chromium`")
    }
}

// MARK: - Page

/// Something the page reported that a test usually wants to be absent.
public struct PageError: Sendable, CustomStringConvertible, Equatable {
    public enum Kind: Sendable, Equatable {
        /// An uncaught exception or unhandled promise rejection (Runtime.exceptionThrown).
        case exception
        /// console.error or a failed console.assert (Runtime.consoleAPICalled).
        case console
        /// A browser log entry at level error, such as a failed resource load (Log.entryAdded).
        case log
        /// The renderer crashed (Inspector.targetCrashed).
        case crash
    }

    public let kind: Kind
    public let message: String

    public var description: String { "\(kind): \(message)" }
}

/// One browser tab. All methods may be called from any task; a test normally uses one page
/// from one task at a time.
public final class Page: Sendable {
    public let browser: HeadlessBrowser
    public let targetID: String
    let sessionID: String
    private let events: PageEvents
    private let listener: Int

    init(browser: HeadlessBrowser, targetID: String, sessionID: String) {
        self.browser = browser
        self.targetID = targetID
        self.sessionID = sessionID
        let events = PageEvents()
        self.events = events
        self.listener = browser.connection.addListener(session: sessionID) { method, params in
            events.handle(method, params)
        }
    }

    /// The URL the page was last navigated to with `goto`/`open`.
    public var url: String { events.lastURL }

    /// Uncaught exceptions, console errors, error log entries and crashes, in order.
    public func errors() -> [PageError] { events.errorsSnapshot() }

    /// Every console message, as "type: text", in order (for diagnostics).
    public func consoleMessages() -> [String] { events.consoleSnapshot() }

    /// Sends a DevTools command to this page's session and returns its result.
    @discardableResult
    public func send(_ method: String, _ params: JSONValue = [:], timeout: Duration? = nil) async throws -> JSONValue {
        try await browser.connection.send(method, params, session: sessionID, timeout: timeout ?? browser.commandTimeout)
    }

    /// Navigates to `url` and waits for the load event of the new document.
    public func goto(_ url: String, timeout: Duration = .seconds(30)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        events.setLastURL(url)
        let navigation = try await send("Page.navigate", ["url": .string(url)], timeout: timeout)
        if let failure = navigation["errorText"]?.stringValue, !failure.isEmpty {
            throw BrowserError(.navigation, "navigating to \(url) failed: \(failure)")
        }
        // A navigation within the same document has no loader and no load event.
        guard let loaderID = navigation["loaderId"]?.stringValue else { return }
        let loaded = events.loadSignal(loaderID)
        do {
            try await withTimeout(deadline - clock.now) { try await loaded.value() }
        } catch is DeadlineExceeded {
            throw BrowserError(.timeout, "\(url) did not fire its load event within \(timeout)\(events.errorSummary())")
        }
    }

    /// Evaluates `javaScript` (an expression; a promise is awaited) and returns the value:
    /// a string as is, null and undefined as nil, anything else as JSON text.
    /// Throws `.javaScript` if the expression throws.
    public func evaluate(_ javaScript: String, timeout: Duration? = nil) async throws -> String? {
        let value = try await evaluateValue(javaScript, timeout: timeout)
        switch value {
        case .null: return nil
        case .string(let text): return text
        default: return value.description
        }
    }

    /// Like `evaluate`, but returns the JSON value.
    public func evaluateValue(_ javaScript: String, timeout: Duration? = nil) async throws -> JSONValue {
        switch try await evaluateOutcome(javaScript, timeout: timeout ?? browser.commandTimeout) {
        case .value(let value): return value
        case .exception(let message):
            throw BrowserError(.javaScript, "`\(javaScript)` threw on \(url): \(message)")
        }
    }

    /// Polls `javaScript` until it is truthy (a promise is awaited first). While it throws
    /// (say, because the app has not defined something yet) it counts as not yet true. Throws
    /// `.timeout` naming the expression, the page's URL, the last exception and the page's
    /// errors if the time runs out.
    public func waitFor(_ javaScript: String, timeout: Duration = .seconds(60)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        let wrapped = "(async () => !!(await (\n\(javaScript)\n)))()"
        var lastProblem: String?
        while true {
            let remaining = deadline - clock.now
            do {
                switch try await evaluateOutcome(wrapped, timeout: max(remaining, .milliseconds(100))) {
                case .value(.bool(true)): return
                case .value: lastProblem = nil
                case .exception(let message): lastProblem = "last attempt threw: \(message)"
                }
            } catch let error as BrowserError where error.kind == .timeout || error.kind == .protocolError {
                // A renderer busy past the deadline, or a document being replaced.
                lastProblem = "last attempt failed: \(error.message)"
            }
            let left = deadline - clock.now
            if left <= .zero { break }
            try await Task.sleep(for: min(.milliseconds(50), left))
        }
        var location = url
        if case .value(.string(let href))? = try? await evaluateOutcome("location.href", timeout: .seconds(2)) {
            location = href
        }
        throw BrowserError(.timeout, "timed out after \(timeout) waiting for `\(javaScript)` to be truthy on \(location)"
            + (lastProblem.map { "; \($0)" } ?? "") + events.errorSummary())
    }

    /// Waits until an element matches `selector`.
    public func waitFor(selector: String, timeout: Duration = .seconds(60)) async throws {
        try await waitFor("document.querySelector(\(javaScriptStringLiteral(selector))) !== null", timeout: timeout)
    }

    /// The rendered text (innerText) of the first element matching `selector`, or nil if none.
    public func text(of selector: String) async throws -> String? {
        try await evaluate("""
            (() => { const e = document.querySelector(\(javaScriptStringLiteral(selector)));
              return e === null ? null : (e instanceof HTMLElement ? e.innerText : e.textContent); })()
            """)
    }

    /// The rendered texts of all elements matching `selector`, in document order.
    public func texts(of selector: String) async throws -> [String] {
        let value = try await evaluateValue("""
            Array.from(document.querySelectorAll(\(javaScriptStringLiteral(selector))),
              e => e instanceof HTMLElement ? e.innerText : e.textContent)
            """)
        return (value.arrayValue ?? []).map { $0.stringValue ?? "" }
    }

    /// Clicks the first element matching `selector` with real mouse events at its centre,
    /// after scrolling it into view. Throws if there is no such element, if it has no size, is
    /// disabled, or another element covers its centre.
    public func click(_ selector: String) async throws {
        let probe = try await evaluateValue("""
            (() => {
              const e = document.querySelector(\(javaScriptStringLiteral(selector)));
              if (e === null) return { problem: 'missing' };
              e.scrollIntoView({ block: 'center', inline: 'center' });
              const r = e.getBoundingClientRect();
              if (r.width === 0 || r.height === 0) return { problem: 'it has no size (hidden?)' };
              if (e.disabled) return { problem: 'it is disabled' };
              const x = r.left + r.width / 2, y = r.top + r.height / 2;
              const hit = document.elementFromPoint(x, y);
              if (hit !== null && hit !== e && !e.contains(hit))
                return { problem: 'its centre is covered by <' + hit.tagName.toLowerCase() + (hit.id ? ' id=' + hit.id : '') + '>' };
              return { x, y };
            })()
            """)
        if let problem = probe["problem"]?.stringValue {
            if problem == "missing" {
                throw BrowserError(.elementNotFound, "cannot click `\(selector)` on \(url): no element matches")
            }
            throw BrowserError(.elementNotInteractable, "cannot click `\(selector)` on \(url): \(problem)")
        }
        guard let x = probe["x"]?.doubleValue, let y = probe["y"]?.doubleValue else {
            throw BrowserError(.protocolError, "cannot click `\(selector)`: unexpected probe result \(probe)")
        }
        try await send("Input.dispatchMouseEvent", ["type": "mouseMoved", "x": .number(x), "y": .number(y)])
        try await send("Input.dispatchMouseEvent", [
            "type": "mousePressed", "x": .number(x), "y": .number(y), "button": "left", "buttons": 1, "clickCount": 1,
        ])
        try await send("Input.dispatchMouseEvent", [
            "type": "mouseReleased", "x": .number(x), "y": .number(y), "button": "left", "buttons": 0, "clickCount": 1,
        ])
    }

    /// Replaces the value of the input, textarea or contenteditable element matching
    /// `selector` as typing would: focus, select all, insert the text (firing `input` events).
    public func fill(_ selector: String, with value: String) async throws {
        let probe = try await evaluate("""
            (() => {
              const e = document.querySelector(\(javaScriptStringLiteral(selector)));
              if (e === null) return 'missing';
              const field = e instanceof HTMLInputElement || e instanceof HTMLTextAreaElement;
              if (!field && !e.isContentEditable) return 'it is a <' + e.tagName.toLowerCase() + '>, not an editable field';
              if (e.disabled || e.readOnly) return 'it is disabled or read-only';
              e.scrollIntoView({ block: 'center', inline: 'center' });
              e.focus();
              if (field) { e.select(); }
              else { const range = document.createRange(); range.selectNodeContents(e);
                     const s = window.getSelection(); s.removeAllRanges(); s.addRange(range); }
              return document.activeElement === e ? 'ok' : 'it did not take the focus';
            })()
            """)
        switch probe {
        case "ok": break
        case "missing": throw BrowserError(.elementNotFound, "cannot fill `\(selector)` on \(url): no element matches")
        default: throw BrowserError(.elementNotInteractable, "cannot fill `\(selector)` on \(url): \(probe ?? "?")")
        }
        if value.isEmpty {
            _ = try await evaluate("document.execCommand('delete')")
        } else {
            try await send("Input.insertText", ["text": .string(value)])
        }
    }

    /// Sets the viewport (CSS pixels, scale 1) until the next call.
    public func setViewport(width: Int, height: Int) async throws {
        try await send("Emulation.setDeviceMetricsOverride", [
            "width": .number(Double(width)), "height": .number(Double(height)), "deviceScaleFactor": 1, "mobile": false,
        ])
    }

    /// Writes a PNG of the page to `path` (creating its folder). With `width` and `height`
    /// the viewport is set first (and stays so); `fullPage` captures the whole document.
    public func screenshot(to path: String, width: Int? = nil, height: Int? = nil, fullPage: Bool = false) async throws {
        if let width, let height { try await setViewport(width: width, height: height) }
        var params: JSONValue = ["format": "png"]
        if fullPage {
            let metrics = try await send("Page.getLayoutMetrics")
            let size = metrics["cssContentSize"] ?? metrics["contentSize"] ?? [:]
            params = [
                "format": "png", "captureBeyondViewport": true,
                "clip": [
                    "x": 0, "y": 0, "scale": 1,
                    "width": size["width"] ?? 0, "height": size["height"] ?? 0,
                ],
            ]
        }
        let shot = try await send("Page.captureScreenshot", params)
        guard let base64 = shot["data"]?.stringValue, let png = Data(base64Encoded: base64) else {
            throw BrowserError(.protocolError, "Page.captureScreenshot returned no image data")
        }
        let file = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try png.write(to: file, options: .atomic)
    }

    /// Closes the tab. The browser stays open.
    public func close() async throws {
        browser.connection.removeListener(listener)
        try await browser.connection.send("Target.closeTarget", ["targetId": .string(targetID)], timeout: browser.commandTimeout)
    }

    private enum Outcome {
        case value(JSONValue)
        case exception(String)
    }

    private func evaluateOutcome(_ expression: String, timeout: Duration) async throws -> Outcome {
        let reply = try await send("Runtime.evaluate", [
            "expression": .string(expression), "returnByValue": true, "awaitPromise": true,
        ], timeout: timeout)
        if let details = reply["exceptionDetails"] {
            return .exception(PageEvents.describeException(details))
        }
        return .value(reply["result"]?["value"] ?? .null)
    }
}

/// What a page's events tell: errors, console messages, load events. Written on the NIO event
/// loop by the connection's listener, read by the test.
private final class PageEvents: Sendable {
    private struct State {
        var lastURL = "about:blank"
        var errors: [PageError] = []
        var console: [String] = []
        var loads: [String: OneShot<Void>] = [:]
    }

    private let state = Locked(State())

    var lastURL: String { state.withLock { $0.lastURL } }
    func setLastURL(_ url: String) { state.withLock { $0.lastURL = url } }
    func errorsSnapshot() -> [PageError] { state.withLock { $0.errors } }
    func consoleSnapshot() -> [String] { state.withLock { $0.console } }

    func errorSummary() -> String {
        let errors = errorsSnapshot()
        if errors.isEmpty { return "" }
        return "; the page reported: " + errors.map(\.description).joined(separator: " | ")
    }

    /// Resolved when the document of `loaderID` fires its load event (before or after this call).
    func loadSignal(_ loaderID: String) -> OneShot<Void> {
        state.withLock { state in
            if let signal = state.loads[loaderID] { return signal }
            let signal = OneShot<Void>()
            state.loads[loaderID] = signal
            return signal
        }
    }

    func handle(_ method: String, _ params: JSONValue) {
        switch method {
        case "Page.lifecycleEvent":
            if params["name"]?.stringValue == "load", let loaderID = params["loaderId"]?.stringValue {
                loadSignal(loaderID).resolve(.success(()))
            }
        case "Runtime.exceptionThrown":
            record(.exception, Self.describeException(params["exceptionDetails"] ?? [:]))
        case "Runtime.consoleAPICalled":
            let type = params["type"]?.stringValue ?? "log"
            let text = (params["args"]?.arrayValue ?? []).map(Self.describeRemoteObject).joined(separator: " ")
            state.withLock { $0.console.append("\(type): \(text)") }
            if type == "error" || type == "assert" { record(.console, text) }
        case "Log.entryAdded":
            let entry = params["entry"] ?? [:]
            if entry["level"]?.stringValue == "error" {
                let text = entry["text"]?.stringValue ?? "?"
                let source = entry["url"]?.stringValue.map { " (\($0))" } ?? ""
                record(.log, text + source)
            }
        case "Inspector.targetCrashed":
            record(.crash, "the renderer crashed")
        default:
            break
        }
    }

    private func record(_ kind: PageError.Kind, _ message: String) {
        state.withLock { $0.errors.append(PageError(kind: kind, message: message)) }
    }

    static func describeException(_ details: JSONValue) -> String {
        var text = details["exception"]?["description"]?.stringValue
            ?? details["exception"]?["value"].map { "\($0)" }
            ?? details["text"]?.stringValue
            ?? "unknown exception"
        if let source = details["url"]?.stringValue, !source.isEmpty, let line = details["lineNumber"]?.intValue {
            text += " (\(source):\(line + 1))"
        }
        return text
    }

    static func describeRemoteObject(_ object: JSONValue) -> String {
        if let value = object["value"] {
            return value.stringValue ?? value.description
        }
        return object["description"]?.stringValue ?? object["type"]?.stringValue ?? "?"
    }
}

// MARK: - The Chromium process

/// A spawned Chromium: its pid (which is its process group id), its output, and two
/// results: the DevTools URL it prints and its exit status.
private final class ChromiumProcess: Sendable {
    let pid: pid_t
    let userDataDirectory: String
    let devToolsURL = OneShot<String>()
    /// Resolved once every process holding Chromium's output has ended, the browser process
    /// has been reaped and the profile directory removed. The value is the wait status.
    let exited = OneShot<Int32>()

    private struct State {
        var partialLine: [UInt8] = []
        var recentLines: [String] = []
        /// Set once the browser process has exited (before it is reaped): from then on its
        /// pid may be reused, so no signal may be sent to it.
        var hasExited = false
    }

    private let state = Locked(State())

    private init(pid: pid_t, userDataDirectory: String) {
        self.pid = pid
        self.userDataDirectory = userDataDirectory
    }

    static func spawn(
        executable: String, arguments: [String], environment: [String: String], userDataDirectory: String
    ) throws -> ChromiumProcess {
        // The read end stays with us; the write end becomes the child's stdout and stderr.
        // Both are created close-on-exec, atomically, so that no other child of this process
        // inherits them (the read loop sees end-of-file only once every holder of the write
        // end is gone). A socket pair, because Glibc's Swift module does not export pipe2.
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw BrowserError(.launch, "socketpair failed: \(String(cString: strerror(errno)))")
        }
        let (readEnd, writeEnd) = (fds[0], fds[1])

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own (pgid = pid), so that one killpg reaches every Chromium
        // process; default signal handlers and an empty signal mask, whatever this process has.
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaultSignals = sigset_t()
        sigfillset(&defaultSignals)
        sigdelset(&defaultSignals, SIGKILL)
        sigdelset(&defaultSignals, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &defaultSignals)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }

        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        close(writeEnd)
        guard status == 0 else {
            close(readEnd)
            throw BrowserError(.launch, "could not start \(executable): \(String(cString: strerror(status)))")
        }

        let process = ChromiumProcess(pid: pid, userDataDirectory: userDataDirectory)
        let reader = Thread { process.monitor(readEnd) }
        reader.name = "chromium-\(pid)-output"
        reader.start()
        return process
    }

    /// SIGKILL to the whole process group, unless the browser process has already exited.
    func killGroup() {
        state.withLock { state in
            // Under the lock: the monitor marks the exit under the same lock before reaping,
            // so the pid (= pgid) cannot have been reused by then.
            if !state.hasExited { _ = killpg(pid, SIGKILL) }
        }
    }

    /// The last lines Chromium printed.
    func recentOutput() -> String {
        state.withLock { $0.recentLines.joined(separator: "\n") }
    }

    /// Runs on the reader thread: drains the output until every holder has closed it, then
    /// reaps the browser process and removes the profile.
    private func monitor(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                consume(buffer[0..<count])
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        close(fd)
        consume([UInt8(ascii: "\n")])

        // Wait for the exit without reaping, mark it, then reap: see killGroup.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1 && errno == EINTR {}
        state.withLock { $0.hasExited = true }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}

        try? FileManager.default.removeItem(atPath: userDataDirectory)
        devToolsURL.resolve(.failure(BrowserError(.launch, "Chromium exited (wait status \(status)) before printing its DevTools URL. Its output:\n\(recentOutput())")))
        exited.resolve(.success(status))
    }

    private func consume<Bytes: Collection<UInt8>>(_ bytes: Bytes) {
        let lines: [String] = state.withLock { state in
            state.partialLine.append(contentsOf: bytes)
            var lines: [String] = []
            while let newline = state.partialLine.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: state.partialLine[..<newline], as: UTF8.self))
                state.partialLine.removeSubrange(...newline)
            }
            state.recentLines.append(contentsOf: lines.filter { !$0.isEmpty })
            if state.recentLines.count > 40 { state.recentLines.removeFirst(state.recentLines.count - 40) }
            return lines
        }
        for line in lines {
            if let start = line.range(of: "DevTools listening on ws://") {
                let url = line[line.index(start.upperBound, offsetBy: -5)...].trimmingCharacters(in: .whitespaces)
                devToolsURL.resolve(.success(url))
            }
        }
    }
}

private func makeTemporaryDirectory(prefix: String) throws -> String {
    var template = Array((NSTemporaryDirectory() + "/" + prefix + "XXXXXX").utf8CString)
    let made = template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!) != nil }
    guard made else {
        throw BrowserError(.launch, "mkdtemp failed: \(String(cString: strerror(errno)))")
    }
    return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

#endif

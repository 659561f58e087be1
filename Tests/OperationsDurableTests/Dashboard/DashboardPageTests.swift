// The dashboard's page in a real browser (headless Chromium): what a person sees, the live
// updates, and the actions with and without the token.
#if Dashboard && SQLite

import BrowserDriver
import DurableTestKinds
import Foundation
import OperationsDashboard
import OperationsDurable
import OperationsSQLite
import OperationsTestHelpers
import Testing

import class Operations.BlockOperation
import class Operations.OperationQueue

/// Whether Chromium can be started here. `.ci/run` installs it and sets
/// `OPERATIONS_REQUIRE_CHROMIUM=1`, so that a missing browser fails there instead of skipping.
let chromiumIsAvailable = HeadlessBrowser.isInstalled

let chromiumRequired = ProcessInfo.processInfo.environment["OPERATIONS_REQUIRE_CHROMIUM"] == "1"

/// Where the page tests leave their screenshots (printed by the tests).
let dashboardScreenshots: URL = {
    let directory = URL(fileURLWithPath: ProcessInfo.processInfo.environment["OPERATIONS_SCREENSHOTS"]
        ?? FileManager.default.temporaryDirectory.appendingPathComponent("dashboard-screenshots").path)
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}()

@Suite(
    "Dashboard: the page in a browser",
    .enabled(if: chromiumIsAvailable || chromiumRequired, "Chromium is not installed (apt-get install chromium)"))
struct DashboardPageTests {
    /// A store filled as an operator would find it: finished work, a failure, a chain of
    /// dependencies, a suspended queue with work waiting, and a worker's heartbeats.
    struct Filled {
        let middle: DurableOperationID
        let failed: DurableOperationID
        let keyed: DurableOperationID
    }

    func fill(_ store: any DurableOperationStore) async throws -> Filled {
        let work = DurableQueue(name: "default", store: store)
        let parked = DurableQueue(name: "parked", store: store)
        try await parked.setSuspended(true)
        for value in 0..<3 { try await parked.add(Echo.self, input: value) }
        let first = try await work.add(Node.self, input: .init(value: 1))
        let middle = try await work.add(Node.self, input: .init(value: 2, parents: [first]), dependencies: [first])
        let left = try await work.add(Node.self, input: .init(value: 3, parents: [middle]), dependencies: [middle])
        let right = try await work.add(Node.self, input: .init(value: 4, parents: [middle]), dependencies: [middle])
        let failed = try await work.add(Flaky.self, input: 5, retry: .never)
        let keyed = try await work.add(Echo.self, input: 42, key: "invoice-42")
        try await withWorkers(store: store) { _ in
            _ = try await within(30, "the chain") { (try await left.value, try await right.value, try await keyed.value) }
            try await pollUntil(30, "the failure") { try await failed.state == .failed }
        }
        return Filled(middle: middle.id, failed: failed.id, keyed: keyed.id)
    }

    /// Shows a route and waits until the page has rendered it.
    func show(_ route: String, named name: String, on page: Page) async throws {
        // Marked first: the view of the same kind shown before does not count as rendered.
        _ = try await page.evaluate("document.getElementById('view').dataset.route = 'leaving'; location.hash = \(javaScriptStringLiteral(route)); 'ok'")
        try await page.waitFor("document.getElementById('view').dataset.route === \(javaScriptStringLiteral(name))")
    }

    func screenshot(_ page: Page, _ name: String) async throws {
        let path = dashboardScreenshots.appendingPathComponent(name).path
        try await page.screenshot(to: path, width: 1280, height: 800)
        print("dashboard screenshot: \(path)")
    }

    @Test("each page shows the store's counts, an attempt's error, a graph node per dependency, and the in-process timeline")
    func pages() async throws {
        try await withStore(StoreKind.named("SQLite")) { store in
            let filled = try await fill(store)
            let queue = OperationQueue()
            queue.name = "thumbnails"
            queue.maxConcurrentOperationCount = 2
            var configuration = OperationsDashboard.Configuration(port: 0)
            configuration.refreshInterval = .milliseconds(200)
            try await withDashboard(store: store, configuration: configuration) { dashboard, client in
                dashboard.watch(queue)
                for index in 0..<6 { queue.addOperation(BlockOperation {}.named("thumbnail \(index)")) }
                await queue.waitUntilAllOperationsAreFinished()
                try await HeadlessBrowser.with { browser in
                    let page = try await browser.open(client.base.absoluteString + "/")
                    // The queues: the counts of each queue, the failure, the worker.
                    try await page.waitFor(selector: ".queue-row[data-queue='parked']")
                    #expect(try await page.text(of: ".queue-row[data-queue='parked'] .c-ready") == "3")
                    #expect(try await page.text(of: ".queue-row[data-queue='default'] .c-succeeded") == "5")
                    #expect(try await page.text(of: ".queue-row[data-queue='default'] .c-failed") == "1")
                    #expect(try await page.text(of: "#failures .failure-row .error") == "flaky attempt 1 failed")
                    #expect(try await page.text(of: "#workers .worker-row td")?.hasPrefix("test0") == true)
                    try await screenshot(page, "queues.png")

                    // An operation: a node per dependency and per dependent, its input.
                    try await show("#/operation/\(filled.middle.rawValue)", named: "operation", on: page)
                    try await page.waitFor(selector: "#graph")
                    #expect(try await page.texts(of: "#graph .graph-node.dependency").count == 1)
                    #expect(try await page.texts(of: "#graph .graph-node.dependent").count == 2)
                    #expect(try await page.text(of: "#input")?.contains("\"value\": 2") == true)
                    #expect(try await page.text(of: "#op-state") == "succeeded")
                    #expect(try await page.texts(of: "#cancel, #retry").isEmpty, "a finished operation offers no cancel; a succeeded one no retry")
                    try await screenshot(page, "operation.png")

                    // A failed operation: its attempt's error.
                    try await show("#/operation/\(filled.failed.rawValue)", named: "operation", on: page)
                    try await page.waitFor(selector: "#attempts .attempt-row")
                    #expect(try await page.texts(of: ".attempt-error") == ["flaky attempt 1 failed"])
                    #expect(try await page.texts(of: "#cancel, #retry") == ["Retry"], "a failed operation offers a retry only")

                    // Failures, workers, search.
                    try await show("#/failures", named: "failures", on: page)
                    #expect(try await page.texts(of: ".failure-row").count == 1)
                    try await show("#/workers", named: "workers", on: page)
                    #expect(try await page.texts(of: ".worker-row").count == 1)
                    try await show("#/search?q=invoice-42", named: "search", on: page)
                    try await page.waitFor(selector: ".operation-row")
                    #expect(try await page.texts(of: ".operation-row .op-link") == ["\(filled.keyed.rawValue)"])

                    // This process's queue: a bar per operation that ran.
                    try await show("#/local", named: "local", on: page)
                    try await page.waitFor(selector: ".local-queue[data-queue='thumbnails'] .bar")
                    #expect(try await page.texts(of: ".local-queue[data-queue='thumbnails'] .bar").count == 6)
                    #expect(try await page.text(of: ".local-queue .wait-description")?.contains("thumbnails") == true)
                    try await screenshot(page, "in-process.png")

                    #expect(page.errors().isEmpty, "\(page.errors())")
                }
            }
        }
    }

    @Test("names and errors from the store are shown as text, never run as the page's script")
    func hostileNames() async throws {
        try await withStore(StoreKind.named("SQLite")) { store in
            let name = "q'-(window.pwned=1)-'<img src=x onerror=\"window.pwned=2\">"
            let queue = DurableQueue(name: name, store: store)
            try await queue.setSuspended(true)
            try await queue.add(Echo.self, input: 1, key: "<script>window.pwned=3</script>")
            try await withDashboard(store: store) { _, client in
                try await HeadlessBrowser.with { browser in
                    let page = try await browser.open(client.base.absoluteString + "/")
                    try await page.waitFor(selector: ".queue-row a")
                    #expect(try await page.text(of: ".queue-row a") == name)
                    // Follows the link the page wrote for the name.
                    _ = try await page.evaluate("location.hash = document.querySelector('.queue-row a').getAttribute('href'); 'ok'")
                    try await page.waitFor(selector: "#operations .operation-row")
                    #expect(try await page.text(of: "#view h2")?.contains(name) == true)
                    try await page.click("#suspend")
                    try await page.waitFor("document.getElementById('action-result').textContent !== ''")
                    // A state that is not one of the six is read as "ready", not written into the page.
                    let hostileState = "succeeded%26x%3D%22%3E%3Cimg%20src%3Dx%20onerror%3Dwindow.pwned%3D4%3E"
                    _ = try await page.evaluate("location.hash = location.hash + '&state=\(hostileState)'; 'ok'")
                    try await page.waitFor(selector: "#operations")
                    #expect(try await page.evaluate("String(window.pwned)") == "undefined")
                    // The refused action's 403 is logged by the browser; nothing else went wrong.
                    let errors = page.errors().filter { $0.kind != .log }
                    #expect(errors.isEmpty, "\(errors)")
                }
            }
        }
    }

    @Test("the queues page follows the store without a reload, pushed to it")
    func livePush() async throws {
        try await withDefaultQueue(StoreKind.named("SQLite")) { queue, store in
            try await queue.setSuspended(true)
            try await queue.add(Echo.self, input: 1)
            var configuration = OperationsDashboard.Configuration(port: 0)
            configuration.refreshInterval = .milliseconds(100)
            try await withDashboard(store: store, configuration: configuration) { _, client in
                try await HeadlessBrowser.with { browser in
                    let page = try await browser.open(client.base.absoluteString + "/")
                    try await page.waitFor("document.querySelector(\".queue-row[data-queue='default'] .c-ready\")?.textContent === '1'")
                    try await page.waitFor("Number(document.body.dataset.refresh) >= 1")
                    for value in 2...3 { try await queue.add(Echo.self, input: value) }
                    try await page.waitFor(
                        "document.querySelector(\".queue-row[data-queue='default'] .c-ready\")?.textContent === '3'", timeout: .seconds(60))
                    #expect(try await page.evaluate("String(performance.getEntriesByType('navigation').length)") == "1")
                    #expect(page.errors().isEmpty, "\(page.errors())")
                }
            }
        }
    }

    @Test("an action from the page without the token is refused and changes nothing; with it, it takes effect")
    func actions() async throws {
        try await withDefaultQueue(StoreKind.named("SQLite")) { queue, store in
            try await queue.setSuspended(true)
            try await queue.add(Echo.self, input: 1)
            var configuration = OperationsDashboard.Configuration(port: 0)
            configuration.actionToken = "s3cret"
            try await withDashboard(store: store, configuration: configuration) { _, client in
                try await HeadlessBrowser.with { browser in
                    let page = try await browser.open(client.base.absoluteString + "/#/queue?name=default")
                    try await page.waitFor(selector: "#resume")
                    try await page.click("#resume")
                    try await page.waitFor("document.getElementById('action-result').textContent !== ''")
                    #expect(try await page.text(of: "#action-result")?.hasPrefix("refused: this action needs the dashboard's token") == true)
                    #expect(try await queue.isSuspended)

                    try await page.fill("#token", with: "s3cret")
                    let renders = try await page.evaluate("document.getElementById('view').dataset.renders") ?? "0"
                    try await page.click("#resume")
                    // A done action reads the view again: its result is still shown after that.
                    try await page.waitFor(
                        "Number(document.getElementById('view').dataset.renders) > \(Int(renders) ?? 0) && document.getElementById('action-result').textContent.includes('resumed')")
                    #expect(try await !queue.isSuspended)
                    try await screenshot(page, "action.png")
                }
            }
        }
    }
}
#endif

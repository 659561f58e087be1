import Operations
import OperationsDashboard
import OperationsDurable
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// 12. Dashboard: the durable chapter's store and a live in-process queue on the web page that
/// `OperationsDashboard` serves. One more image is enqueued with no worker alive, so the page
/// has something to explain; an in-process queue holds an operation so that another waits for
/// it. With Chromium installed, the chapter saves screenshots of three pages.
public struct DashboardChapter: Chapter {
    public static let name = "dashboard"
    public static let title = "dashboard: the durable pipeline and a live in-process queue on a web page"
    static let localQueueName = "tour-thumbnails"
    public init() {}

    /// The pages the chapter photographs: file name, and the page's address after `#`.
    struct Page {
        let file: String
        let fragment: String
        let shows: String
    }

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let location = DurableChapter.storeLocation(in: context)
        // The durable chapter's pipeline, with its interrupted download; run it when it has not run.
        var opened = try location.open()
        var interrupted = try blocking { [store = opened.store] in try await Self.interruptedDownload(in: store) }
        if interrupted == nil {
            blocking { [close = opened.close] in await close() }
            context.console.say("   the durable chapter has not run in \(context.output.url.path): running it first")
            _ = try DurableChapter().run(in: context)
            opened = try location.open()
            interrupted = try blocking { [store = opened.store] in try await Self.interruptedDownload(in: store) }
        }
        let (store, close) = opened
        defer { blocking { await close() } }
        guard let interrupted, let inspection = store as? any DurableStoreInspection else {
            throw TourError.durableWorker(reason: "the durable chapter left no interrupted download in \(location)")
        }

        // One more image, enqueued while no worker runs: its download is ready, its sepia waits.
        let server = try context.blockingImageServer()
        let queue = DurableQueue(name: DurableChapter.queueName, store: store)
        let pending = context.settings.imageCount + 1
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("operations-tour-dashboard-\(UUID().uuidString.prefix(8))")
        let (download, sepia) = try blocking {
            let download = try await queue.add(
                DurableDownload.self,
                input: .init(url: server.url(ofImage: pending).absoluteString, file: work.appendingPathComponent("download.png").path))
            let sepia = try await queue.add(
                DurableSepia.self, input: .init(source: download, file: work.appendingPathComponent("sepia.png").path),
                dependencies: [download])
            return (download, sepia)
        }
        defer {
            // Not for a worker of a later run: the two stay on the page as cancelled.
            try? blocking { try await sepia.cancel(reason: "the dashboard chapter's example, not run") }
            try? blocking { try await download.cancel(reason: "the dashboard chapter's example, not run") }
        }

        // An in-process queue: thumbnails, then an approval that holds a slot until the
        // screenshots are taken, and a publish step that waits for it.
        let local = OperationQueue()
        local.name = Self.localQueueName
        local.maxConcurrentOperationCount = 2
        var configuration = OperationsDashboard.Configuration()
        configuration.port = context.settings.dashboardPort
        configuration.refreshInterval = .milliseconds(500)
        let dashboard = OperationsDashboard(store: inspection, storeName: "\(location)", configuration: configuration)
        dashboard.watch(local)
        let approvalStarted = DispatchSemaphore(value: 0)
        let approve = DispatchSemaphore(value: 0)
        defer { approve.signal() }
        for index in 0..<context.settings.imageCount {
            let input = RGBAImage.generated(index: index, size: context.settings.imageSize)
            local.addOperation(FilterOperation(name: "thumbnail \(index + 1)", input: input) { Filters.blur($0, radius: 2) })
        }
        let approval = BlockOperation {
            approvalStarted.signal()
            approve.wait()
        }
        approval.name = "approval (held until the screenshots are taken)"
        let publish = BlockOperation {}
        publish.name = "publish"
        publish.addDependency(approval)
        local.addOperations([approval, publish], waitUntilFinished: false)
        approvalStarted.wait()

        let url = try blocking { try await dashboard.start() }
        defer { blocking { await dashboard.stop() } }
        context.console.say("   the dashboard serves \(location) and the in-process queue \"\(Self.localQueueName)\" at \(url)")

        // What the page reads: the overview every viewer shares.
        let overview = try blocking { try await Self.get(url.appendingPathComponent("api/overview")) }
        result.files.append(try context.output.write(overview, to: "12-dashboard-overview.json"))
        let counts = try Self.counts(ofQueue: DurableChapter.queueName, in: overview)
        for (state, count) in counts { result.numbers["durable \(state)"] = Double(count) }
        let localQueue = try Self.localQueue(named: Self.localQueueName, in: overview)
        result.numbers["in-process timeline entries"] = Double(localQueue.timeline)
        result.lists["in-process wait description"] = localQueue.waitDescription
        result.lists["interrupted download"] = ["\(interrupted.rawValue)"]
        result.lists["example operations"] = ["\(download.id.rawValue)", "\(sepia.id.rawValue)"]
        let states = ["waiting", "ready", "running", "succeeded", "failed", "cancelled"]
        context.console.say("   \(DurableChapter.queueName): \(states.map { "\(counts[$0] ?? 0) \($0)" }.joined(separator: ", ")); \(Self.localQueueName): \(localQueue.timeline) operations on its timeline")

        let pages = [
            Page(file: "12-dashboard-queues.png", fragment: "/", shows: "the queues, their counts and finishes per minute, workers, failures"),
            Page(file: "12-dashboard-operation.png", fragment: "/operation/\(interrupted.rawValue)",
                 shows: "the download interrupted by SIGKILL: its two attempts, the first one's error, its place in the graph"),
            Page(file: "12-dashboard-waiting.png", fragment: "/operation/\(sepia.id.rawValue)",
                 shows: "the extra image's sepia step: why it waits"),
            Page(file: "12-dashboard-in-process.png", fragment: "/local",
                 shows: "the in-process queue: its timeline by worker slot, and why publish waits"),
        ]
        if let chromium = Screenshots.findChromium() {
            let browser = try Screenshots(executable: chromium)
            for page in pages {
                let file = context.output.url.appendingPathComponent(page.file)
                // Ready: the page shows its route's data and has had a push from the live feed.
                let route = page.fragment.split(separator: "/").first.map(String.init) ?? "queues"
                try browser.take(
                    of: URL(string: url.absoluteString + "/#" + page.fragment)!,
                    when: "document.getElementById('view').dataset.route === '\(route)' && document.body.dataset.refresh !== undefined",
                    to: file)
                result.files.append(file)
                context.console.say("   \(page.file): \(page.shows)")
            }
        } else {
            result.lists["screenshots skipped"] = [Screenshots.notFound]
            context.console.say("   no screenshots: \(Screenshots.notFound)")
        }
        approve.signal()
        local.waitUntilAllOperationsAreFinished()

        let command = switch location {
        case .sqlite(let path): "swift run --traits Dashboard,SQLite operations-dashboard --sqlite \(path)"
        case .postgres: "swift run --traits Dashboard,PostgreSQL operations-dashboard --postgres URL"
        }
        context.console.say("   to browse the store yourself, from the repository's root: \(command)")
        return result
    }

    /// The durable chapter's download that ran again after its worker was killed, if the
    /// store holds the chapter's run: a lease its worker stopped renewing (a download rerun
    /// because a live worker renewed too late, on a loaded machine, says "could not renew").
    static func interruptedDownload(in store: any DurableOperationStore) async throws -> DurableOperationID? {
        guard let inspection = store as? any DurableStoreInspection else { return nil }
        try await store.migrate()
        var after: DurableOperationID? = nil
        var rerun: [DurableOperationID] = []
        repeat {
            let page = try await inspection.operations(queue: DurableChapter.queueName, state: .succeeded, after: after, limit: 100)
            rerun += page.filter { $0.kind == DurableDownload.kind && $0.attempt > 1 }.map(\.id)
            after = page.count == 100 ? page.last?.id : nil
        } while after != nil
        for id in rerun {
            let attempts = try await inspection.details(of: id, edgeLimit: 0)?.record.attempts ?? []
            if attempts.contains(where: { $0.error?.contains("stopped renewing") == true }) { return id }
        }
        return rerun.first
    }

    static func get(_ url: URL) async throws -> Data {
        let (data, response) = try await URLSession.shared.data(from: url)
        guard let http = response as? HTTPURLResponse, http.statusCode == 200 else {
            throw TourError.badResponse(url: url.absoluteString, reason: "\(response)")
        }
        return data
    }

    /// A durable queue's counts by state, from the overview's JSON.
    static func counts(ofQueue name: String, in overview: Data) throws -> [String: Int] {
        let root = try JSONSerialization.jsonObject(with: overview) as? [String: Any]
        let queues = (root?["store"] as? [String: Any])?["queues"] as? [[String: Any]] ?? []
        guard let queue = queues.first(where: { $0["name"] as? String == name }), let counts = queue["counts"] as? [String: Int] else {
            throw TourError.badResponse(url: "/api/overview", reason: "no queue \(name) in \(String(decoding: overview, as: UTF8.self).prefix(500))")
        }
        return counts
    }

    /// An in-process queue's timeline length and wait description, from the overview's JSON.
    static func localQueue(named name: String, in overview: Data) throws -> (timeline: Int, waitDescription: [String]) {
        let root = try JSONSerialization.jsonObject(with: overview) as? [String: Any]
        let queues = root?["local"] as? [[String: Any]] ?? []
        guard let queue = queues.first(where: { $0["name"] as? String == name }) else {
            throw TourError.badResponse(url: "/api/overview", reason: "no in-process queue \(name)")
        }
        return ((queue["timeline"] as? [Any])?.count ?? 0, queue["waitDescription"] as? [String] ?? [])
    }
}

// The dashboard's HTTP routes: the page, the JSON it reads, the live feed, the actions.
#if Dashboard
import FlyingFox
import Foundation
import Operations
import OperationsDurable

/// Answers the routes for one dashboard. Every answer is JSON except the page; an error
/// is `{"error": "…"}` with a status that says which kind: 400 (malformed), 401 (no or a
/// wrong token), 403 (actions disabled), 404 (unknown), 503 (the store cannot be reached).
struct DashboardRoutes: Sendable {
    let store: (any DurableStoreInspection)?
    let storeName: String?
    let local: LocalQueues
    let feed: DashboardFeed
    let configuration: OperationsDashboard.Configuration

    func install(on server: HTTPServer) async {
        func route(_ path: HTTPRoute, _ handler: @escaping @Sendable (HTTPRequest) async throws -> HTTPResponse) async {
            await server.appendRoute(path, to: Guarded(routes: self, next: ClosureHTTPHandler(handler)))
        }
        await route("GET /") { _ in
            HTTPResponse(statusCode: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: Data(DashboardPage.html.utf8))
        }
        await route("GET /api/overview") { _ in
            let (_, data) = await feed.current()
            return json(data)
        }
        await route("GET /api/local") { _ in json(DashboardCoding.encode(local.json)) }
        // A queue's name is a query parameter: it may hold any character, "/" too.
        await route("GET /api/queue") { request in try await queuePage(request) }
        await route("GET /api/operations/:id") { request in try await operation(request) }
        await route("GET /api/failures") { request in try await failures(request) }
        await route("GET /api/workers") { _ in try await workers() }
        await route("GET /api/search") { request in try await search(request) }
        let socket = WebSocketHTTPHandler(handler: MessageFrameWSHandler(handler: FeedSocket(feed: feed)))
        await route("GET /live") { request in try await socket.handleRequest(request) }
        await route("POST /api/operations/:id/:action") { request in try await operationAction(request) }
        await route("POST /api/queue/:action") { request in try await queueAction(request) }
        await route("GET /api/*") { _ in failure(.notFound, "no such route") }
    }

    /// Answers only requests addressed to the dashboard by one of its names (a page of
    /// another site that rebinds its own name to this address is refused), and, for the live
    /// feed and the actions, sent by the dashboard's own page (the `Origin` a browser sets).
    struct Guarded: HTTPHandler {
        let routes: DashboardRoutes
        let next: any HTTPHandler

        func handleRequest(_ request: HTTPRequest) async throws -> HTTPResponse {
            let allowed = routes.allowedHosts
            guard let host = request.headers[HTTPHeader("Host")].map(hostName), allowed.contains(host) else {
                return failure(.forbidden, "this dashboard answers only to \(allowed.sorted().joined(separator: ", ")) (the Host header)")
            }
            if request.method == .POST || request.path == "/live", let origin = request.headers[HTTPHeader("Origin")] {
                guard let originHost = URL(string: origin)?.host.map({ $0.lowercased() }), allowed.contains(originHost) else {
                    return failure(.forbidden, "a request from another site's page (Origin \(origin)) is refused")
                }
            }
            return try await next.handleRequest(request)
        }

        /// The host of a Host header, without its port, in lower case.
        private func hostName(_ header: String) -> String {
            var text = header.lowercased()
            if text.hasPrefix("[") {
                return String(text.dropFirst().prefix { $0 != "]" })
            }
            if let colon = text.lastIndex(of: ":") { text = String(text[..<colon]) }
            return text
        }
    }

    /// The names the dashboard answers to: its configured ones, the address it listens on,
    /// and this machine's loopback names.
    var allowedHosts: Set<String> {
        Set((configuration.allowedHosts + [configuration.host, "localhost", "127.0.0.1", "::1"]).map { $0.lowercased() })
    }

    // MARK: Reads

    private func queuePage(_ request: HTTPRequest) async throws -> HTTPResponse {
        guard let store else { return noStore() }
        guard let name = request.query["name"], !name.isEmpty else { return failure(.badRequest, "name is missing: the queue's name") }
        let stateText = request.query["state"] ?? "ready"
        guard let state = DurableState(rawValue: stateText) else {
            return failure(.badRequest, "state must be one of waiting, ready, running, succeeded, failed, cancelled (not \"\(stateText)\")")
        }
        var after: DurableOperationID?
        if let text = request.query["after"] {
            guard let raw = Int64(text) else { return failure(.badRequest, "after must be an operation id (not \"\(text)\")") }
            after = DurableOperationID(rawValue: raw)
        }
        let limit = configuration.pageSize
        return await reading { [after] in
            let page = try await store.operations(queue: name, state: state, after: after, limit: limit + 1)
            let shown = Array(page.prefix(limit))
            return OperationPageJSON(queue: name, state: state, operations: shown, next: page.count > limit ? shown.last?.id : nil)
        }
    }

    private func operation(_ request: HTTPRequest) async throws -> HTTPResponse {
        guard let store else { return noStore() }
        guard let id = operationID(request) else { return badID(request) }
        let found = await readingValue { () async throws -> OperationJSON? in
            guard let details = try await store.details(of: id, edgeLimit: 100) else { return nil }
            let description = try await store.waitDescription(of: id) ?? ""
            return OperationJSON(details, waitDescription: description)
        }
        switch found {
        case .failure(let error): return unreachable(error)
        case .success(nil): return failure(.notFound, "\(id) is not stored: never added, or pruned")
        case .success(let operation?): return json(DashboardCoding.encode(operation))
        }
    }

    private func failures(_ request: HTTPRequest) async throws -> HTTPResponse {
        guard let store else { return noStore() }
        let queue = request.query["queue"].flatMap { $0.isEmpty ? nil : $0 }
        return await reading {
            try await store.failureGroups(queue: queue, window: configuration.finishedWindow, now: Date(), limit: 100)
        }
    }

    private func workers() async throws -> HTTPResponse {
        guard let store else { return noStore() }
        return await reading { try await store.workers(window: configuration.finishedWindow, now: Date()) }
    }

    private func search(_ request: HTTPRequest) async throws -> HTTPResponse {
        guard let store else { return noStore() }
        let text = (request.query["q"] ?? "").trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return failure(.badRequest, "q is empty: search by an operation id, a kind or a key") }
        return await reading { SearchJSON(query: text, operations: try await store.search(text, limit: 50)) }
    }

    // MARK: Actions

    private func operationAction(_ request: HTTPRequest) async throws -> HTTPResponse {
        if let refused = authorize(request) { return refused }
        guard let store else { return noStore() }
        guard let id = operationID(request) else { return badID(request) }
        switch request.routeParameters["action"] {
        case "cancel":
            return await reading {
                try await store.cancel(id, reason: "cancelled from the dashboard")
                return ActionJSON(done: "asked \(id) to cancel")
            }
        case "retry":
            switch await readingValue({ try await store.retry(id) }) {
            case .failure(let error): return unreachable(error)
            case .success(true): return json(DashboardCoding.encode(ActionJSON(done: "\(id) runs again")))
            case .success(false):
                let stored = try? await store.record(of: id, includingAttempts: false)
                return stored == nil
                    ? failure(.notFound, "\(id) is not stored: never added, or pruned")
                    : failure(.conflict, "\(id) cannot be retried: only a failed or cancelled operation can")
            }
        default:
            return failure(.notFound, "no such action: use cancel or retry")
        }
    }

    private func queueAction(_ request: HTTPRequest) async throws -> HTTPResponse {
        if let refused = authorize(request) { return refused }
        guard let store else { return noStore() }
        guard let name = request.query["name"], !name.isEmpty else { return failure(.badRequest, "name is missing: the queue's name") }
        switch request.routeParameters["action"] {
        case "suspend":
            return await reading {
                try await store.setSuspended(true, queue: name)
                return ActionJSON(done: "queue \"\(name)\" suspended")
            }
        case "resume":
            return await reading {
                try await store.setSuspended(false, queue: name)
                return ActionJSON(done: "queue \"\(name)\" resumed")
            }
        case "limit":
            let text = request.query["value"] ?? ""
            let limit: Int?
            if text == "none" {
                limit = nil
            } else {
                guard let value = Int(text), value > 0 else {
                    return failure(.badRequest, "value must be a positive number, or none for no limit (not \"\(text)\")")
                }
                limit = value
            }
            return await reading {
                try await store.setMaxConcurrentOperationCount(limit, queue: name)
                return ActionJSON(done: "queue \"\(name)\" limit \(limit.map(String.init) ?? "none")")
            }
        default:
            return failure(.notFound, "no such action: use suspend, resume or limit")
        }
    }

    /// Nil when the request may act; else the refusal.
    private func authorize(_ request: HTTPRequest) -> HTTPResponse? {
        guard let token = configuration.actionToken else {
            return failure(.forbidden, "actions are disabled: start the dashboard with an action token to enable them")
        }
        let given = request.headers[HTTPHeader("Authorization")] ?? ""
        guard constantTimeEqual(given, "Bearer " + token) else {
            return failure(.unauthorized, "this action needs the dashboard's token (Authorization: Bearer …)")
        }
        return nil
    }

    // MARK: Answers

    private func operationID(_ request: HTTPRequest) -> DurableOperationID? {
        Int64(request.routeParameters["id"] ?? "").map(DurableOperationID.init(rawValue:))
    }

    private func badID(_ request: HTTPRequest) -> HTTPResponse {
        failure(.badRequest, "\"\(request.routeParameters["id"] ?? "")\" is not an operation id (a number)")
    }

    /// Runs `read` against the store: its value as JSON, or 503 saying why the store
    /// cannot be reached.
    private func reading<Value: Encodable & Sendable>(_ read: @escaping @Sendable () async throws -> Value) async -> HTTPResponse {
        switch await readingValue(read) {
        case .success(let value): json(DashboardCoding.encode(value))
        case .failure(let error): unreachable(error)
        }
    }

    /// Runs `read`, keeping its error.
    private func readingValue<Value: Sendable>(_ read: @escaping @Sendable () async throws -> Value) async -> Result<Value, any Error> {
        do {
            return .success(try await withReadDeadline(configuration.readDeadline, "a dashboard read", read))
        } catch {
            return .failure(error)
        }
    }

    /// A read or an action that threw: a refusal of the store (409, 404) or a store that
    /// cannot be reached (503).
    private func unreachable(_ error: any Error) -> HTTPResponse {
        if let durable = error as? DurableError {
            switch durable.code {
            case .invalidArgument: return failure(.conflict, "\(durable.message)")
            case .notFound: return failure(.notFound, "\(durable.message)")
            default: break
            }
        }
        return failure(.serviceUnavailable, "the store cannot be reached: \(error)")
    }

    private func noStore() -> HTTPResponse {
        failure(.notFound, "this dashboard serves in-process queues only: it has no store")
    }
}

func json(_ data: Data, status: HTTPStatusCode = .ok) -> HTTPResponse {
    HTTPResponse(statusCode: status, headers: [.contentType: "application/json", HTTPHeader("Cache-Control"): "no-store"], body: data)
}

func failure(_ status: HTTPStatusCode, _ message: String) -> HTTPResponse {
    json(DashboardCoding.encode(ErrorJSON(error: message)), status: status)
}

/// Compares without stopping at the first difference, so that the time taken does not
/// tell how much of a guessed token was right.
func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    let x = Array(a.utf8), y = Array(b.utf8)
    var difference = x.count ^ y.count
    for index in 0..<max(x.count, y.count) {
        let left = index < x.count ? x[index] : 0
        let right = index < y.count ? y[index] : 0
        difference |= Int(left ^ right)
    }
    return difference == 0
}
#endif

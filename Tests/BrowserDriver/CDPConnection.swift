// The Chrome DevTools Protocol transport for HeadlessBrowser: a JSON value type, a one-shot
// result that several tasks can await, a timeout helper, and a WebSocket client (SwiftNIO)
// that matches replies to commands and hands events to listeners.
//
// Self-contained together with HeadlessBrowser.swift; needs NIOCore, NIOPosix, NIOHTTP1 and
// NIOWebSocket from swift-nio. (Foundation's URLSessionWebSocketTask is not usable on Linux:
// its libcurl has no WebSocket support, so every task fails with "WebSockets not supported
// by libcurl".)

#if Dashboard
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
@_spi(Engine) import Operations

// MARK: - JSON

/// A JSON value, as the DevTools protocol sends and receives it.
public enum JSONValue: Sendable, Hashable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral,
    ExpressibleByNilLiteral
{
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(nilLiteral: ()) { self = .null }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The member `key` of an object, else nil.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var doubleValue: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    public var intValue: Int? {
        if case .number(let value) = self, let exact = Int(exactly: value) { return exact }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// Compact JSON text with sorted keys; integral numbers print without a fraction.
    public var description: String {
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .number(let value):
            if let exact = Int(exactly: value) { return String(exact) }
            return value.isFinite ? String(value) : "null"
        case .string(let value): return javaScriptStringLiteral(value)
        case .array(let values): return "[" + values.map(\.description).joined(separator: ",") + "]"
        case .object(let members):
            let parts = members.keys.sorted().map { javaScriptStringLiteral($0) + ":" + members[$0]!.description }
            return "{" + parts.joined(separator: ",") + "}"
        }
    }
}

/// `text` as a double-quoted JSON string literal, which is also a valid JavaScript literal.
public func javaScriptStringLiteral(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case "\u{2028}": out += "\\u2028"
        case "\u{2029}": out += "\\u2029"
        default:
            if scalar.value < 0x20 {
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}

// MARK: - Errors

/// Every failure of the driver: what went wrong, in words that name the page, the
/// expression or the selector involved.
public struct BrowserError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// Chromium could not be found or started, or printed no DevTools URL.
        case launch
        /// The WebSocket to Chromium failed or closed.
        case connection
        /// Chromium answered a command with an error.
        case protocolError
        /// The page's JavaScript threw while evaluating an expression.
        case javaScript
        /// Page.navigate reported a failure (DNS, refused connection, ...).
        case navigation
        /// A bounded wait ran out.
        case timeout
        /// No element matches a selector.
        case elementNotFound
        /// The element exists but cannot be clicked or filled (hidden, covered, disabled, ...).
        case elementNotInteractable
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "BrowserError.\(kind): \(message)" }
}

// MARK: - One-shot results and timeouts

/// A result that is set once and can be awaited by any number of tasks, before or after it
/// is set. A waiting task that is cancelled stops waiting with CancellationError.
final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var result: Result<Value, any Error>?
        var waiters: [Int: CheckedContinuation<Value, any Error>] = [:]
        /// Waiters whose task was cancelled before they were registered.
        var cancelled: Set<Int> = []
        var nextToken = 0
    }

    private let state = Locked(State())

    var isResolved: Bool { state.withLock { $0.result != nil } }

    /// Sets the result unless one is set already; returns whether this call set it.
    @discardableResult
    func resolve(_ result: Result<Value, any Error>) -> Bool {
        let waiters: [CheckedContinuation<Value, any Error>]? = state.withLock { state in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume(with: result) }
        return true
    }

    func value() async throws -> Value {
        let token = state.withLock { state in
            state.nextToken += 1
            return state.nextToken
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                let immediate: Result<Value, any Error>? = state.withLock { state in
                    if let result = state.result { return result }
                    if state.cancelled.remove(token) != nil { return .failure(CancellationError()) }
                    state.waiters[token] = continuation
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter: CheckedContinuation<Value, any Error>? = state.withLock { state in
                guard state.result == nil else { return nil }
                if let waiter = state.waiters.removeValue(forKey: token) { return waiter }
                state.cancelled.insert(token)
                return nil
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}

/// Thrown by `withTimeout` when the time runs out; callers turn it into a BrowserError that
/// says what was being waited for.
struct DeadlineExceeded: Error {}

/// Runs `operation`, cancelling it and throwing DeadlineExceeded if it takes longer than
/// `timeout`. The operation must respond to cancellation (OneShot.value and Task.sleep do).
func withTimeout<T: Sendable>(
    _ timeout: Duration,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw DeadlineExceeded()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw DeadlineExceeded() }
        return first
    }
}

// MARK: - The DevTools connection

/// One WebSocket connection to Chromium's DevTools endpoint. Commands may be sent from any
/// task; replies are matched by id. Events are handed to listeners, in the order Chromium
/// sent them, on the NIO event loop thread: listeners must be quick and must not block.
final class CDPConnection: Sendable {
    typealias EventHandler = @Sendable (_ method: String, _ params: JSONValue) -> Void

    private let channel: any Channel
    private let router: CDPRouter
    let endpoint: String

    private init(channel: any Channel, router: CDPRouter, endpoint: String) {
        self.channel = channel
        self.router = router
        self.endpoint = endpoint
    }

    /// Connects to a `ws://host:port/path` DevTools URL.
    static func connect(to webSocketURL: String, timeout: Duration) async throws -> CDPConnection {
        guard let url = URL(string: webSocketURL), url.scheme == "ws", let host = url.host, let port = url.port
        else { throw BrowserError(.connection, "not a ws://host:port/... DevTools URL: \(webSocketURL)") }
        let path = url.path.isEmpty ? "/" : url.path
        let router = CDPRouter()

        enum Upgrade: Sendable {
            case upgraded(any Channel)
            case refused
        }

        do {
            return try await withTimeout(timeout) {
                let upgrade: EventLoopFuture<Upgrade> = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connectTimeout(.seconds(10))
                    .connect(host: host, port: port) { channel in
                        channel.eventLoop.makeCompletedFuture {
                            let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(
                                // Screenshots arrive as one base64 text message of several MB.
                                maxFrameSize: 1 << 28,
                                upgradePipelineHandler: { channel, _ in
                                    channel.eventLoop.makeCompletedFuture {
                                        let sync = channel.pipeline.syncOperations
                                        try sync.addHandler(NIOWebSocketFrameAggregator(
                                            minNonFinalFragmentSize: 0,
                                            maxAccumulatedFrameCount: 1 << 16,
                                            maxAccumulatedFrameSize: 1 << 28
                                        ))
                                        try sync.addHandler(CDPFrameHandler(router: router))
                                        return Upgrade.upgraded(channel)
                                    }
                                }
                            )
                            var headers = HTTPHeaders()
                            // Chromium accepts only an IP address or localhost as Host, and
                            // rejects requests that carry an Origin header it was not told about.
                            headers.add(name: "Host", value: "\(host):\(port)")
                            headers.add(name: "Content-Length", value: "0")
                            let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
                            let configuration = NIOTypedHTTPClientUpgradeConfiguration<Upgrade>(
                                upgradeRequestHead: head,
                                upgraders: [upgrader],
                                notUpgradingCompletionHandler: { channel in
                                    channel.eventLoop.makeCompletedFuture { Upgrade.refused }
                                }
                            )
                            return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                                configuration: .init(upgradeConfiguration: configuration)
                            )
                        }
                    }
                switch try await upgrade.get() {
                case .upgraded(let channel):
                    return CDPConnection(channel: channel, router: router, endpoint: webSocketURL)
                case .refused:
                    throw BrowserError(.connection, "\(webSocketURL) refused the WebSocket upgrade")
                }
            }
        } catch is DeadlineExceeded {
            throw BrowserError(.connection, "no WebSocket connection to \(webSocketURL) within \(timeout)")
        } catch let error as BrowserError {
            throw error
        } catch {
            throw BrowserError(.connection, "WebSocket connection to \(webSocketURL) failed: \(error)")
        }
    }

    /// Sends a command and returns its `result` object. Throws `.protocolError` if Chromium
    /// answers with an error, `.timeout` if no answer comes within `timeout`, `.connection` if
    /// the connection is or gets closed.
    @discardableResult
    func send(
        _ method: String,
        _ params: JSONValue = [:],
        session: String? = nil,
        timeout: Duration
    ) async throws -> JSONValue {
        let (id, reply) = try router.register()
        defer { router.forget(id) }

        var message: [String: JSONValue] = ["id": .number(Double(id)), "method": .string(method), "params": params]
        if let session { message["sessionId"] = .string(session) }
        let frame = WebSocketFrame(
            fin: true,
            opcode: .text,
            maskKey: .random(), // a client must mask what it sends (RFC 6455 5.3)
            data: channel.allocator.buffer(string: JSONValue.object(message).description)
        )
        do {
            try await channel.writeAndFlush(frame)
        } catch {
            throw BrowserError(.connection, "could not send \(method) to \(endpoint): \(error)")
        }
        do {
            return try await withTimeout(timeout) { try await reply.value() }
        } catch is DeadlineExceeded {
            throw BrowserError(.timeout, "\(method) got no reply from Chromium within \(timeout)")
        }
    }

    /// Calls `handler` for every event of `session` (nil: events of the browser itself).
    func addListener(session: String?, _ handler: @escaping EventHandler) -> Int {
        router.addListener(session: session, handler)
    }

    func removeListener(_ token: Int) {
        router.removeListener(token)
    }

    /// Closes the WebSocket; pending and later commands fail with `.connection`.
    func close() {
        router.connectionClosed(BrowserError(.connection, "the DevTools connection was closed"))
        channel.close(promise: nil)
    }
}

/// Matches replies to pending commands and hands events to listeners.
private final class CDPRouter: Sendable {
    private struct Listener {
        let session: String?
        let handler: CDPConnection.EventHandler
    }

    private struct State {
        var nextID = 0
        var pending: [Int: OneShot<JSONValue>] = [:]
        var nextListener = 0
        var listeners: [Int: Listener] = [:]
        var closedReason: BrowserError?
    }

    private struct Incoming: Decodable {
        struct Failure: Decodable {
            let code: Int?
            let message: String?
            let data: String?
        }

        let id: Int?
        let result: JSONValue?
        let error: Failure?
        let method: String?
        let params: JSONValue?
        let sessionId: String?
    }

    private let state = Locked(State())

    func register() throws -> (Int, OneShot<JSONValue>) {
        let reply = OneShot<JSONValue>()
        let id = try state.withLock { state in
            if let reason = state.closedReason { throw reason }
            state.nextID += 1
            state.pending[state.nextID] = reply
            return state.nextID
        }
        return (id, reply)
    }

    func forget(_ id: Int) {
        _ = state.withLock { $0.pending.removeValue(forKey: id) }
    }

    func addListener(session: String?, _ handler: @escaping CDPConnection.EventHandler) -> Int {
        state.withLock { state in
            state.nextListener += 1
            state.listeners[state.nextListener] = Listener(session: session, handler: handler)
            return state.nextListener
        }
    }

    func removeListener(_ token: Int) {
        _ = state.withLock { $0.listeners.removeValue(forKey: token) }
    }

    func deliver(_ text: ByteBuffer) {
        guard let message = try? JSONDecoder().decode(Incoming.self, from: Data(text.readableBytesView)) else {
            return // not a DevTools message; nothing is waiting for it
        }
        if let id = message.id {
            guard let reply = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return }
            if let failure = message.error {
                let detail = [failure.message, failure.data].compactMap { $0 }.joined(separator: ": ")
                reply.resolve(.failure(BrowserError(.protocolError, "Chromium answered \(failure.code.map(String.init) ?? "?"): \(detail)")))
            } else {
                reply.resolve(.success(message.result ?? [:]))
            }
        } else if let method = message.method {
            let handlers = state.withLock { state in
                state.listeners.keys.sorted().compactMap { key -> CDPConnection.EventHandler? in
                    let listener = state.listeners[key]!
                    return listener.session == message.sessionId ? listener.handler : nil
                }
            }
            for handler in handlers { handler(method, message.params ?? [:]) }
        }
    }

    func connectionClosed(_ reason: BrowserError) {
        let pending: [OneShot<JSONValue>] = state.withLock { state in
            if state.closedReason == nil { state.closedReason = reason }
            defer { state.pending = [:] }
            return Array(state.pending.values)
        }
        for reply in pending { reply.resolve(.failure(reason)) }
    }
}

/// The last handler of the WebSocket pipeline: complete text messages go to the router,
/// pings get pongs, a close frame closes the channel.
private final class CDPFrameHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let router: CDPRouter

    init(router: CDPRouter) {
        self.router = router
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            router.deliver(frame.unmaskedData)
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            router.connectionClosed(BrowserError(.connection, "Chromium closed the DevTools connection"))
            let close = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: context.channel.allocator.buffer(capacity: 0))
            context.writeAndFlush(wrapOutboundOut(close), promise: nil)
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        router.connectionClosed(BrowserError(.connection, "the DevTools connection closed (did Chromium exit?)"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        router.connectionClosed(BrowserError(.connection, "the DevTools connection failed: \(error)"))
        context.close(promise: nil)
    }
}

#endif

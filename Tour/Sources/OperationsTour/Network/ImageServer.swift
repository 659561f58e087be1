import FlyingFox
import Foundation

/// The tour's image server, on 127.0.0.1: `GET /images/N` serves generated PNG number N
/// after a per-image latency (number 1 is deliberately slow, as in the tutorial);
/// `GET /garbage` answers 200 with bytes that are not an image; `GET /flaky/N` answers
/// 503 (Service Unavailable) to its first ``flakyFailures`` requests, then serves image N.
/// A chapter can hold an image's responses back until it has cancelled the download
/// (``hold(image:)``). The server counts the requests for each image.
public final class ImageServer: Sendable {
    public let baseURL: URL
    public let imageCount: Int
    /// The PNG sizes, by index.
    public let sizes: [Int]
    private let server: HTTPServer
    private let task: Task<Void, any Error>
    private let holds: ResponseHolds
    private let counts: RequestCounts

    private init(
        baseURL: URL, imageCount: Int, sizes: [Int], server: HTTPServer, task: Task<Void, any Error>, holds: ResponseHolds,
        counts: RequestCounts
    ) {
        self.baseURL = baseURL
        self.imageCount = imageCount
        self.sizes = sizes
        self.server = server
        self.task = task
        self.holds = holds
        self.counts = counts
    }

    /// How many requests `GET /flaky/N` answers with 503 before it serves the image.
    public static let flakyFailures = 2

    /// How many requests for image `index` (`/images/N`) the server has received.
    public func requestCount(ofImage index: Int) -> Int { counts.count(of: "images/\(index)") }

    /// The URL that fails ``flakyFailures`` times before it serves image `index`.
    public func flakyURL(ofImage index: Int) -> URL { baseURL.appendingPathComponent("flaky/\(index)") }

    /// The index of the deliberately slow image.
    public static let slowImage = 1

    /// Holds image `index`'s responses (after their latency) until the returned hold is
    /// released: a download of it cannot finish before then.
    public func hold(image index: Int) -> ResponseHold {
        ResponseHold(holds: holds, index: index)
    }

    public static func latency(of index: Int, unit: Double) -> Double {
        index == slowImage ? 4 * unit : (0.5 + Double(index % 3) * 0.25) * unit
    }

    public func url(ofImage index: Int) -> URL { baseURL.appendingPathComponent("images/\(index)") }

    static func start(settings: TourSettings) async throws -> ImageServer {
        let count = max(settings.imageCount, settings.listRows)
        let images = try (0..<count).map { try RGBAImage.generated(index: $0, size: settings.imageSize).png() }
        guard let port = UInt16(exactly: settings.port) else {
            throw TourError.serverCannotStart(reason: "port \(settings.port) is not a valid port")
        }
        // 127.0.0.1 explicitly: FlyingFox's `.loopback` is the IPv6 one.
        let server = HTTPServer(address: try sockaddr_in.inet(ip4: "127.0.0.1", port: port), logger: .disabled)
        let unit = settings.unit
        let holds = ResponseHolds()
        let counts = RequestCounts()
        await server.appendRoute("GET /images/:index") { request in
            guard let index = Int(request.routeParameters["index"] ?? ""), images.indices.contains(index) else {
                return HTTPResponse(statusCode: .notFound)
            }
            counts.add("images/\(index)")
            try await Task.sleep(nanoseconds: UInt64(latency(of: index, unit: unit) * 1e9))
            await holds.waitUntilReleased(index)
            return HTTPResponse(statusCode: .ok, headers: [.contentType: "image/png"], body: images[index])
        }
        await server.appendRoute("GET /flaky/:index") { request in
            guard let index = Int(request.routeParameters["index"] ?? ""), images.indices.contains(index) else {
                return HTTPResponse(statusCode: .notFound)
            }
            guard counts.add("flaky/\(index)") > flakyFailures else {
                return HTTPResponse(statusCode: .serviceUnavailable)
            }
            return HTTPResponse(statusCode: .ok, headers: [.contentType: "image/png"], body: images[index])
        }
        await server.appendRoute("GET /garbage") { _ in
            HTTPResponse(statusCode: .ok, headers: [.contentType: "image/png"], body: Data("this is not a PNG".utf8))
        }
        let task = Task { try await server.run() }
        do {
            try await server.waitUntilListening(timeout: 10)
        } catch {
            task.cancel()
            let reason = (try? await task.value).map { _ in "\(error)" } ?? "\(error)"
            throw TourError.serverCannotStart(reason: "cannot listen on 127.0.0.1:\(settings.port): \(reason)")
        }
        // The address can lag `waitUntilListening` by a moment.
        var address = await server.listeningAddress
        for _ in 0..<100 where address == nil {
            try await Task.sleep(nanoseconds: 10_000_000)
            address = await server.listeningAddress
        }
        let boundPort: UInt16
        switch address {
        case .ip4(_, let port), .ip6(_, let port): boundPort = port
        default:
            task.cancel()
            throw TourError.serverCannotStart(reason: "no listening address (\(String(describing: address)))")
        }
        return ImageServer(
            baseURL: URL(string: "http://127.0.0.1:\(boundPort)")!, imageCount: count, sizes: images.map(\.count),
            server: server, task: task, holds: holds, counts: counts)
    }

    func stop() async {
        holds.releaseAll()
        await server.stop(timeout: 1)
        task.cancel()
    }
}

/// Requests received, by path.
final class RequestCounts: Sendable {
    private let counts = Protected<[String: Int]>([:])

    /// Counts one request for `path`; returns how many there have been.
    @discardableResult
    func add(_ path: String) -> Int { counts.withLock { $0[path, default: 0] += 1; return $0[path]! } }

    func count(of path: String) -> Int { counts.current[path] ?? 0 }
}

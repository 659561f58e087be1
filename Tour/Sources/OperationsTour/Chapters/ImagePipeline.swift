import Operations
import OperationsRecording
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An operation that produces an image for the operations that depend on it.
public protocol ImageProducing: AnyObject {
    var image: RGBAImage? { get }
}

extension Operation {
    /// The image of the first dependency that produced one: data passed along
    /// `dependencies`, the tutorials' way.
    var imageFromDependencies: RGBAImage? {
        dependencies.lazy.compactMap { ($0 as? ImageProducing)?.image }.first
    }
}

/// Downloads and decodes a PNG over HTTP: the classic asynchronous operation. Cancelling it
/// cancels the request.
public final class DownloadOperation: Operation, ImageProducing, @unchecked Sendable {
    // `@unchecked Sendable`: mutable state is behind `lock`.
    public let url: URL
    private let lock = NSLock()
    private var _image: RGBAImage?
    private var _error: (any Error)?
    private var _bytes = 0
    private var _task: URLSessionDataTask?
    private var _executing = false
    private var _finished = false

    public init(url: URL, name: String? = nil) {
        self.url = url
        super.init()
        self.name = name ?? "download \(url.lastPathComponent)"
    }

    public var image: RGBAImage? { lock.withLock { _image } }
    public var error: (any Error)? { lock.withLock { _error } }
    public var bytesReceived: Int { lock.withLock { _bytes } }

    public override var isAsynchronous: Bool { true }
    public override var isExecuting: Bool { lock.withLock { _executing } }
    public override var isFinished: Bool { lock.withLock { _finished } }

    public override func start() {
        if isCancelled {
            finish()
            return
        }
        willChangeValue(forKey: "isExecuting")
        lock.withLock { _executing = true }
        didChangeValue(forKey: "isExecuting")
        let url = self.url
        let task = URLSession.shared.dataTask(with: url) { [self] data, response, error in
            let outcome: Result<(RGBAImage, Int), any Error>
            if let error {
                outcome = .failure(error)
            } else if let http = response as? HTTPURLResponse, http.statusCode != 200 {
                outcome = .failure(TourError.badResponse(url: url.absoluteString, reason: "HTTP \(http.statusCode)"))
            } else {
                let data = data ?? Data()
                outcome = Result {
                    do { return (try RGBAImage(png: data), data.count) } catch {
                        throw TourError.badResponse(url: url.absoluteString, reason: "\(error)")
                    }
                }
            }
            lock.withLock {
                switch outcome {
                case .success(let (image, bytes)):
                    _image = image
                    _bytes = bytes
                case .failure(let error):
                    _error = error
                }
            }
            finish()
        }
        lock.withLock { _task = task }
        task.resume()
    }

    public override func cancel() {
        super.cancel()
        lock.withLock { _task }?.cancel()
    }

    private func finish() {
        let wasExecuting = isExecuting
        willChangeValue(forKey: "isFinished")
        if wasExecuting { willChangeValue(forKey: "isExecuting") }
        lock.withLock {
            _executing = false
            _finished = true
            _task = nil
        }
        if wasExecuting { didChangeValue(forKey: "isExecuting") }
        didChangeValue(forKey: "isFinished")
    }
}

/// Applies a filter to the image of its dependency.
public final class FilterOperation: Operation, ImageProducing, @unchecked Sendable {
    // `@unchecked Sendable`: `result` is behind `lock`.
    private let filter: @Sendable (RGBAImage) -> RGBAImage
    private let lock = NSLock()
    private var result: RGBAImage?
    /// CPU seconds the filter took.
    public private(set) var seconds: Double {
        get { lock.withLock { _seconds } }
        set { lock.withLock { _seconds = newValue } }
    }
    private var _seconds = 0.0

    public init(name: String, input: RGBAImage? = nil, _ filter: @escaping @Sendable (RGBAImage) -> RGBAImage) {
        self.filter = filter
        self.result = input
        super.init()
        self.name = name
    }

    public var image: RGBAImage? { lock.withLock { result } }

    public override func main() {
        guard !isCancelled, let input = lock.withLock({ result }) ?? imageFromDependencies else { return }
        let started = Date()
        let output = filter(input)
        seconds = Date().timeIntervalSince(started)
        lock.withLock { result = output }
    }
}

/// Writes the image of its dependency to the output folder as PNG.
public final class OutputOperation: Operation, @unchecked Sendable {
    // `@unchecked Sendable`: `written` is behind `lock`.
    private let folder: OutputFolder
    private let fileName: String
    private let lock = NSLock()
    private var _written: URL?
    private var _error: (any Error)?

    public init(folder: OutputFolder, fileName: String) {
        self.folder = folder
        self.fileName = fileName
        super.init()
        name = "write \(fileName)"
    }

    public var written: URL? { lock.withLock { _written } }
    public var error: (any Error)? { lock.withLock { _error } }

    public override func main() {
        guard !isCancelled, let image = imageFromDependencies else { return }
        do {
            let url = try folder.write(try image.png(), to: fileName)
            lock.withLock { _written = url }
        } catch {
            lock.withLock { _error = error }
        }
    }
}

/// A composite: download → filter → post-process → output, on a private queue, finishing
/// when its last step does; cancelling it cancels every step.
public final class ImageProvider: Sendable {
    public let index: Int
    public let download: DownloadOperation
    public let filter: FilterOperation
    public let vignette: FilterOperation
    public let output: OutputOperation
    private let queue: OperationQueue

    public init(index: Int, server: ImageServer, folder: OutputFolder, prefix: String, recorder: OperationRecorder? = nil) {
        self.index = index
        // Names for people: the file prefix without its chapter number ("7-provider" → "provider").
        let label = String(prefix.drop { $0.isNumber || $0 == "-" })
        download = DownloadOperation(url: server.url(ofImage: index), name: "\(label) \(index): download")
        filter = FilterOperation(name: "\(label) \(index): sepia") { Filters.sepia($0) }
        vignette = FilterOperation(name: "\(label) \(index): vignette") { Filters.vignette($0) }
        output = OutputOperation(folder: folder, fileName: "\(prefix)-\(index).png")
        output.name = "\(label) \(index): write"
        filter.addDependency(download)
        vignette.addDependency(filter)
        output.addDependency(vignette)
        queue = OperationQueue()
        queue.name = "\(label) \(index)"
        recorder?.record(queue)
    }

    public func start(completion: @escaping @Sendable () -> Void = {}) {
        output.completionBlock = completion
        queue.addOperations([download, filter, vignette, output], waitUntilFinished: false)
    }

    /// Cancels the last stage first. `cancelAllOperations()` goes in the order added, and
    /// cancelling the download finishes it at once (its request is cancelled): the next
    /// stage could start, find no image and count as succeeded before it is cancelled too.
    public func cancel() {
        for operation in [output, vignette, filter, download] as [Operation] { operation.cancel() }
    }

    public func wait() { queue.waitUntilAllOperationsAreFinished() }

    public var isFinished: Bool { output.isFinished }
    public var isCancelled: Bool { output.isCancelled }
    public var delivered: Bool { output.written != nil }
}

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where the tour writes images, timelines and traces. Every file is written to a
/// temporary name first and renamed into place, so an interrupted run leaves no
/// half-written file.
public struct OutputFolder: Sendable {
    public let url: URL

    /// Creates the folder (and its parents) and checks that it can be written.
    public init(path: String) throws {
        url = URL(fileURLWithPath: path, isDirectory: true).standardizedFileURL
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            let probe = url.appendingPathComponent(".write-test-\(UUID().uuidString)")
            try Data().write(to: probe)
            try FileManager.default.removeItem(at: probe)
        } catch {
            throw TourError.outputFolderNotWritable(path: url.path, reason: "\(error.localizedDescription)")
        }
    }

    /// Writes `data` to `name` atomically: temporary file, then rename.
    @discardableResult
    public func write(_ data: Data, to name: String) throws -> URL {
        let destination = url.appendingPathComponent(name)
        let temporary = url.appendingPathComponent(".\(name).\(UUID().uuidString).partial")
        do {
            try data.write(to: temporary)
            // rename(2) replaces an existing file atomically.
            guard rename(temporary.path, destination.path) == 0 else {
                throw TourError.outputFolderNotWritable(path: destination.path, reason: String(cString: strerror(errno)))
            }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw TourError.outputFolderNotWritable(path: destination.path, reason: "\(error.localizedDescription)")
        }
        return destination
    }
}

/// What can go wrong in the tour, each with a one-line message.
public enum TourError: Error, CustomStringConvertible, Equatable {
    case outputFolderNotWritable(path: String, reason: String)
    case serverCannotStart(reason: String)
    case badResponse(url: String, reason: String)
    case imageDecoding(String)
    case durableWorker(reason: String)

    public var description: String {
        switch self {
        case .outputFolderNotWritable(let path, let reason): "cannot write to \(path): \(reason)"
        case .serverCannotStart(let reason): "cannot start the image server: \(reason)"
        case .badResponse(let url, let reason): "bad response from \(url): \(reason)"
        case .imageDecoding(let reason): "cannot decode image: \(reason)"
        case .durableWorker(let reason): "durable chapter: \(reason)"
        }
    }
}

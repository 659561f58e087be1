import Foundation
@testable import OperationsTour
import Testing

@Suite("Tour: bad input")
struct BadInputTests {
    @Test("an output folder that cannot be written is refused with a clear message")
    func unwritableOutput() throws {
        // A path under a regular file cannot be a folder.
        let file = NSTemporaryDirectory() + "operations-tour-file-\(UUID().uuidString)"
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        var settings = TourSettings.quick
        settings.outputPath = file + "/output"
        #expect {
            _ = try TourContext(settings: settings, console: Console.silent())
        } throws: { error in
            guard case .outputFolderNotWritable(let path, _) = error as? TourError else { return false }
            return path.hasSuffix("/output")
        }
    }

    @Test("a port that cannot be bound is refused with a clear message")
    func portInUse() async throws {
        var settings = TourSettings.quick
        settings.outputPath = NSTemporaryDirectory() + "operations-tour-tests/port-\(UUID().uuidString)"
        let first = try TourContext(settings: settings, console: Console.silent())
        let server = try await first.imageServer()
        settings.port = server.baseURL.port!
        let second = try TourContext(settings: settings, console: Console.silent())
        await #expect {
            _ = try await second.imageServer()
        } throws: { error in
            guard case .serverCannotStart = error as? TourError else { return false }
            return true
        }
        await first.stop()
    }

    @Test("a server that answers garbage makes the download fail with a clear error, not a crash")
    func garbageResponse() async throws {
        var settings = TourSettings.quick
        settings.outputPath = NSTemporaryDirectory() + "operations-tour-tests/garbage-\(UUID().uuidString)"
        let context = try TourContext(settings: settings, console: Console.silent())
        let server = try await context.imageServer()
        let download = DownloadOperation(url: server.baseURL.appendingPathComponent("garbage"))
        let missing = DownloadOperation(url: server.baseURL.appendingPathComponent("images/9999"))
        download.start()
        missing.start()
        await download.waitUntilFinished()
        await missing.waitUntilFinished()
        #expect(download.image == nil)
        guard case .badResponse(_, let reason) = download.error as? TourError else {
            Issue.record("expected a bad response, got \(String(describing: download.error))")
            return
        }
        #expect(!reason.isEmpty)
        guard case .badResponse(_, "HTTP 404") = missing.error as? TourError else {
            Issue.record("expected HTTP 404, got \(String(describing: missing.error))")
            return
        }
        await context.stop()
    }

    /// The built `operations-demo`, beside the test bundle.
    static var demo: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("operations-demo")
    }

    /// Runs the demo; returns its exit status, standard error, and the output folder's files.
    static func runDemo(_ arguments: [String]) throws -> (status: Int32, error: String) {
        let process = Process()
        process.executableURL = demo
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        let data = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test("an unknown chapter or option exits non-zero with a message", arguments: [["no-such-chapter"], ["--no-such-option"], ["printer", "--port", "70000"]])
    func unknownChapter(arguments: [String]) throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.demo.path), "operations-demo is built beside the tests")
        let (status, error) = try Self.runDemo(arguments)
        #expect(status != 0)
        #expect(error.contains("Error"))
    }

    @Test("an unwritable output folder exits non-zero with one line, leaving nothing behind")
    func unwritableOutputFolder() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.demo.path))
        let file = NSTemporaryDirectory() + "operations-tour-file-\(UUID().uuidString)"
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let (status, error) = try Self.runDemo(["printer", "--quick", "--output", file + "/out"])
        #expect(status != 0)
        #expect(error.contains("cannot write to"))
        #expect(!FileManager.default.fileExists(atPath: file + "/out"))
    }
}

@Suite("Tour: images")
struct ImageTests {
    @Test("a PNG round trip keeps every pixel, with each row filter", arguments: PNG.Filter.allCases)
    func roundTrip(_ filter: PNG.Filter) throws {
        let image = RGBAImage.generated(index: 3, size: 32)
        let (width, height, pixels) = try PNG.decode(PNG.encode(width: 32, height: 32, pixels: image.pixels, filter: filter))
        #expect(RGBAImage(width: width, height: height, pixels: pixels) == image)
        #expect(try RGBAImage(png: image.png()) == image)
    }

    @Test("a PNG written by libpng decodes to the pixels libpng reads from it")
    func decodesAnotherEncodersFile() throws {
        let url = try #require(Bundle.module.url(forResource: "libpng-rgba-filters", withExtension: "png"))
        let image = try RGBAImage(png: Data(contentsOf: url))
        #expect(image.width == 192 && image.height == 192)
        // The FNV-1a hash of the RGBA pixels libpng's simplified API decoded from this file.
        let hash = image.pixels.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        #expect(hash == 0x7638_a061_ec55_b760)
    }

    @Test("garbage, a truncated file and a corrupted chunk do not decode, with a message")
    func garbage() throws {
        #expect(throws: TourError.self) { try RGBAImage(png: Data("not a png".utf8)) }
        let png = try RGBAImage.generated(index: 2, size: 16).png()
        #expect(throws: TourError.self) { try RGBAImage(png: png.prefix(png.count / 2)) }
        var corrupted = png
        corrupted[40] ^= 0xff
        #expect(throws: TourError.self) { try RGBAImage(png: corrupted) }
    }

    @Test("filters keep the size and change the pixels; sepia has no blue above red")
    func filters() {
        let image = RGBAImage.generated(index: 1, size: 24)
        let blurred = Filters.blur(image, radius: 2)
        let sepia = Filters.sepia(image)
        #expect(blurred.width == 24 && blurred.height == 24)
        #expect(blurred != image && sepia != image)
        for offset in stride(from: 0, to: sepia.pixels.count, by: 4) {
            #expect(sepia.pixels[offset + 2] <= sepia.pixels[offset])
        }
    }
}

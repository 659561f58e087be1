import Foundation

/// An 8-bit RGBA image, row by row.
public struct RGBAImage: Sendable, Equatable {
    public let width: Int
    public let height: Int
    public var pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(pixels.count == width * height * 4, "RGBAImage: \(pixels.count) bytes for \(width)×\(height)")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// Decodes a PNG (8-bit, not interlaced; see `PNG`).
    public init(png data: Data) throws {
        let (width, height, pixels) = try PNG.decode(data)
        self.init(width: width, height: height, pixels: pixels)
    }

    /// Encodes as PNG.
    public func png() throws -> Data {
        try PNG.encode(width: width, height: height, pixels: pixels)
    }

    /// A generated picture: a sky-to-ground gradient with a sun and hills, hue-shifted by
    /// `index` so that each image of a set differs.
    public static func generated(index: Int, size: Int) -> RGBAImage {
        var pixels = [UInt8](repeating: 255, count: size * size * 4)
        let hue = Double(index % 8) / 8
        let sunX = Double(size) * (0.25 + 0.5 * Double(index % 3) / 2), sunY = Double(size) * 0.3
        for y in 0..<size {
            for x in 0..<size {
                let fy = Double(y) / Double(size), fx = Double(x) / Double(size)
                let hill = 0.65 + 0.08 * sin(fx * 9 + Double(index))
                var r: Double, g: Double, b: Double
                if fy > hill {
                    (r, g, b) = (40 + 60 * hue, 120 + 60 * fx, 50)
                } else {
                    (r, g, b) = (90 + 120 * hue * fy, 140 + 80 * fy, 230 - 60 * hue)
                }
                let distance = ((Double(x) - sunX) * (Double(x) - sunX) + (Double(y) - sunY) * (Double(y) - sunY)).squareRoot()
                if distance < Double(size) * 0.09 { (r, g, b) = (250, 220, 90) }
                let offset = (y * size + x) * 4
                pixels[offset] = UInt8(max(0, min(255, r)))
                pixels[offset + 1] = UInt8(max(0, min(255, g)))
                pixels[offset + 2] = UInt8(max(0, min(255, b)))
            }
        }
        return RGBAImage(width: size, height: size, pixels: pixels)
    }
}

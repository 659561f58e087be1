/// The tutorials' filters, over RGBA pixels.
public enum Filters {
    /// A box blur of `radius` pixels (two passes: rows, then columns), alpha kept.
    public static func blur(_ image: RGBAImage, radius: Int = 3) -> RGBAImage {
        let horizontal = boxPass(image.pixels, width: image.width, height: image.height, radius: radius, alongRows: true)
        let both = boxPass(horizontal, width: image.width, height: image.height, radius: radius, alongRows: false)
        return RGBAImage(width: image.width, height: image.height, pixels: both)
    }

    /// The classic sepia ("vintage") colour matrix.
    public static func sepia(_ image: RGBAImage) -> RGBAImage {
        var pixels = image.pixels
        for offset in stride(from: 0, to: pixels.count, by: 4) {
            let r = Double(pixels[offset]), g = Double(pixels[offset + 1]), b = Double(pixels[offset + 2])
            pixels[offset] = UInt8(min(255, 0.393 * r + 0.769 * g + 0.189 * b))
            pixels[offset + 1] = UInt8(min(255, 0.349 * r + 0.686 * g + 0.168 * b))
            pixels[offset + 2] = UInt8(min(255, 0.272 * r + 0.534 * g + 0.131 * b))
        }
        return RGBAImage(width: image.width, height: image.height, pixels: pixels)
    }

    /// A darkened frame around the picture ("post-processing").
    public static func vignette(_ image: RGBAImage) -> RGBAImage {
        var pixels = image.pixels
        let cx = Double(image.width) / 2, cy = Double(image.height) / 2
        let reach = (cx * cx + cy * cy).squareRoot()
        for y in 0..<image.height {
            for x in 0..<image.width {
                let d = ((Double(x) - cx) * (Double(x) - cx) + (Double(y) - cy) * (Double(y) - cy)).squareRoot() / reach
                let factor = max(0.35, 1 - d * d * 0.9)
                let offset = (y * image.width + x) * 4
                for channel in 0..<3 { pixels[offset + channel] = UInt8(Double(pixels[offset + channel]) * factor) }
            }
        }
        return RGBAImage(width: image.width, height: image.height, pixels: pixels)
    }

    private static func boxPass(_ source: [UInt8], width: Int, height: Int, radius: Int, alongRows: Bool) -> [UInt8] {
        var output = source
        let lines = alongRows ? height : width, length = alongRows ? width : height
        for line in 0..<lines {
            func index(_ i: Int) -> Int { (alongRows ? line * width + i : i * width + line) * 4 }
            for channel in 0..<3 {
                var sum = 0, count = 0
                for i in 0..<min(radius, length) { sum += Int(source[index(i) + channel]); count += 1 }
                for i in 0..<length {
                    if i + radius < length { sum += Int(source[index(i + radius) + channel]); count += 1 }
                    if i - radius - 1 >= 0 { sum -= Int(source[index(i - radius - 1) + channel]); count -= 1 }
                    output[index(i) + channel] = UInt8(sum / max(count, 1))
                }
            }
        }
        return output
    }
}

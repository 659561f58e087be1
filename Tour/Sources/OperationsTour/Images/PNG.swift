// PNG, written and read by the tour itself over zlib: 8-bit images, not interlaced.

import CZlib
import Foundation

/// The PNG format as far as the tour needs it: encoding 8-bit RGBA, decoding 8-bit gray,
/// gray with alpha, RGB and RGBA images that are not interlaced (every image the tour makes
/// or serves; anything else is refused with a message).
enum PNG {
    static let signature: [UInt8] = [137, 80, 78, 71, 13, 10, 26, 10]

    /// A row's filter: how each byte was predicted from its neighbours before compression.
    enum Filter: UInt8, CaseIterable {
        case none = 0, sub, up, average, paeth
    }

    // MARK: Encoding

    /// `pixels` (8-bit RGBA, row by row) as a PNG, each row with `filter`.
    static func encode(width: Int, height: Int, pixels: [UInt8], filter: Filter = .paeth) throws -> Data {
        let stride = width * 4
        var filtered = [UInt8](repeating: 0, count: height * (stride + 1))
        for y in 0..<height {
            let out = y * (stride + 1)
            filtered[out] = filter.rawValue
            for x in 0..<stride {
                let raw = pixels[y * stride + x]
                let left = x >= 4 ? pixels[y * stride + x - 4] : 0
                let above = y > 0 ? pixels[(y - 1) * stride + x] : 0
                let aboveLeft = x >= 4 && y > 0 ? pixels[(y - 1) * stride + x - 4] : 0
                filtered[out + 1 + x] = raw &- predict(filter, left: left, above: above, aboveLeft: aboveLeft)
            }
        }
        var header = Data()
        header.appendBigEndian(UInt32(width))
        header.appendBigEndian(UInt32(height))
        header.append(contentsOf: [8, 6, 0, 0, 0])  // 8 bits, RGBA, deflate, adaptive filtering, no interlace
        var png = Data(signature)
        png.appendChunk("IHDR", header)
        png.appendChunk("IDAT", try deflate(filtered))
        png.appendChunk("IEND", Data())
        return png
    }

    // MARK: Decoding

    /// The image's pixels as 8-bit RGBA.
    static func decode(_ data: Data) throws -> (width: Int, height: Int, pixels: [UInt8]) {
        let bytes = [UInt8](data)
        guard bytes.count >= 8, Array(bytes[0..<8]) == signature else { throw failure("not a PNG (no PNG signature)") }
        var offset = 8
        var header: (width: Int, height: Int, channels: Int)?
        var compressed = [UInt8]()
        var ended = false
        while !ended {
            guard offset + 12 <= bytes.count else { throw failure("truncated before its IEND chunk") }
            let length = Int(bytes.bigEndianUInt32(at: offset))
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            guard length <= bytes.count - offset - 12 else { throw failure("chunk \(type) is truncated") }
            let body = bytes[(offset + 8)..<(offset + 8 + length)]
            let stored = bytes.bigEndianUInt32(at: offset + 8 + length)
            guard crc(bytes[(offset + 4)..<(offset + 8 + length)]) == stored else { throw failure("chunk \(type) fails its CRC") }
            switch type {
            case "IHDR":
                header = try readHeader(Array(body))
            case "IDAT":
                compressed.append(contentsOf: body)
            case "IEND":
                ended = true
            case "PLTE":
                throw failure("palette images are not supported")
            default:
                // Ancillary chunks (a lower-case first letter) may be skipped; critical ones not.
                guard let first = type.unicodeScalars.first, first.properties.isLowercase else {
                    throw failure("unknown critical chunk \(type)")
                }
            }
            offset += 12 + length
        }
        guard let (width, height, channels) = header else { throw failure("no IHDR chunk") }
        let stride = width * channels
        let raw = try inflate(compressed, expected: height * (stride + 1))
        var rows = [UInt8](repeating: 0, count: height * stride)
        for y in 0..<height {
            guard let filter = Filter(rawValue: raw[y * (stride + 1)]) else {
                throw failure("row \(y) has unknown filter \(raw[y * (stride + 1)])")
            }
            for x in 0..<stride {
                let left = x >= channels ? rows[y * stride + x - channels] : 0
                let above = y > 0 ? rows[(y - 1) * stride + x] : 0
                let aboveLeft = x >= channels && y > 0 ? rows[(y - 1) * stride + x - channels] : 0
                rows[y * stride + x] = raw[y * (stride + 1) + 1 + x] &+ predict(filter, left: left, above: above, aboveLeft: aboveLeft)
            }
        }
        return (width, height, expandToRGBA(rows, channels: channels))
    }

    private static func readHeader(_ body: [UInt8]) throws -> (width: Int, height: Int, channels: Int) {
        guard body.count == 13 else { throw failure("IHDR has \(body.count) bytes, not 13") }
        let width = Int(body.bigEndianUInt32(at: 0)), height = Int(body.bigEndianUInt32(at: 4))
        guard width > 0, height > 0, width <= 1 << 14, height <= 1 << 14, width * height <= 1 << 24 else {
            throw failure("\(width)×\(height) is not a size the tour reads (at most 16384 on a side, 16 megapixels)")
        }
        guard body[8] == 8 else { throw failure("bit depth \(body[8]) is not supported (only 8)") }
        let channels: Int
        switch body[9] {
        case 0: channels = 1
        case 2: channels = 3
        case 4: channels = 2
        case 6: channels = 4
        default: throw failure("colour type \(body[9]) is not supported (gray, gray with alpha, RGB, RGBA)")
        }
        guard body[10] == 0, body[11] == 0 else { throw failure("unknown compression or filter method") }
        guard body[12] == 0 else { throw failure("interlaced images are not supported") }
        return (width, height, channels)
    }

    private static func expandToRGBA(_ rows: [UInt8], channels: Int) -> [UInt8] {
        if channels == 4 { return rows }
        let count = rows.count / channels
        var pixels = [UInt8](repeating: 255, count: count * 4)
        for index in 0..<count {
            let source = index * channels, target = index * 4
            switch channels {
            case 1, 2:
                pixels[target] = rows[source]
                pixels[target + 1] = rows[source]
                pixels[target + 2] = rows[source]
                if channels == 2 { pixels[target + 3] = rows[source + 1] }
            default:
                pixels[target] = rows[source]
                pixels[target + 1] = rows[source + 1]
                pixels[target + 2] = rows[source + 2]
            }
        }
        return pixels
    }

    // MARK: Parts

    /// The prediction a filter subtracts when encoding and adds back when decoding.
    private static func predict(_ filter: Filter, left: UInt8, above: UInt8, aboveLeft: UInt8) -> UInt8 {
        switch filter {
        case .none: return 0
        case .sub: return left
        case .up: return above
        case .average: return UInt8((Int(left) + Int(above)) / 2)
        case .paeth:
            let estimate = Int(left) + Int(above) - Int(aboveLeft)
            let toLeft = abs(estimate - Int(left)), toAbove = abs(estimate - Int(above)), toAboveLeft = abs(estimate - Int(aboveLeft))
            if toLeft <= toAbove && toLeft <= toAboveLeft { return left }
            return toAbove <= toAboveLeft ? above : aboveLeft
        }
    }

    private static func deflate(_ bytes: [UInt8]) throws -> Data {
        var size = compressBound(uLong(bytes.count))
        var output = [UInt8](repeating: 0, count: Int(size))
        let status = compress2(&output, &size, bytes, uLong(bytes.count), 6)
        guard status == Z_OK else { throw TourError.imageDecoding("encoding failed: zlib status \(status)") }
        return Data(output.prefix(Int(size)))
    }

    private static func inflate(_ bytes: [UInt8], expected: Int) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: expected)
        var size = uLong(expected)
        let status = uncompress(&output, &size, bytes, uLong(bytes.count))
        guard status == Z_OK, Int(size) == expected else {
            throw failure(status == Z_BUF_ERROR ? "more image data than its size says" : "its image data does not inflate (zlib status \(status))")
        }
        return output
    }

    private static func crc<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt32 {
        Array(bytes).withUnsafeBufferPointer { buffer in UInt32(crc32(0, buffer.baseAddress, uInt(buffer.count))) }
    }

    private static func failure(_ reason: String) -> TourError { .imageDecoding(reason) }

    fileprivate static func chunkCRC(_ bytes: [UInt8]) -> UInt32 { crc(bytes) }
}

private extension Data {
    mutating func appendBigEndian(_ value: UInt32) {
        append(contentsOf: [UInt8(value >> 24), UInt8((value >> 16) & 0xff), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)])
    }

    mutating func appendChunk(_ type: String, _ body: Data) {
        appendBigEndian(UInt32(body.count))
        let typed = Array(type.utf8) + Array(body)
        append(contentsOf: typed)
        appendBigEndian(PNG.chunkCRC(typed))
    }
}

private extension Array where Element == UInt8 {
    func bigEndianUInt32(at offset: Int) -> UInt32 {
        UInt32(self[offset]) << 24 | UInt32(self[offset + 1]) << 16 | UInt32(self[offset + 2]) << 8 | UInt32(self[offset + 3])
    }
}

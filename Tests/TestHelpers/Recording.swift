import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import class Operations.BlockOperation
import class Operations.OperationQueue
import OperationsRecording

/// The elements of an SVG document, parsed as XML (which also proves it is well-formed).
public final class SVGElements: NSObject, XMLParserDelegate {
    public struct Element {
        public let name: String
        public let attributes: [String: String]
        /// The `data-id` of the operation row (`g.operation`) it is in, if any.
        public let row: Int?
        public var className: String? { attributes["class"] }
    }

    public private(set) var elements: [Element] = []
    public private(set) var error: Error?
    /// The rows open around the element being parsed.
    private var openRows: [Int?] = []

    /// Parses the `<svg>…</svg>` part of an HTML page.
    public init(page: String) {
        super.init()
        guard let start = page.range(of: "<svg"), let end = page.range(of: "</svg>") else {
            error = CocoaError(.fileReadCorruptFile)
            return
        }
        let parser = XMLParser(data: Data(page[start.lowerBound..<end.upperBound].utf8))
        parser.delegate = self
        if !parser.parse() { error = parser.parserError ?? CocoaError(.fileReadCorruptFile) }
    }

    public func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
                       attributes: [String: String] = [:]) {
        let row = elementName == "g" && attributes["class"] == "operation" ? attributes["data-id"].flatMap(Int.init) : openRows.last ?? nil
        elements.append(Element(name: elementName, attributes: attributes, row: row))
        openRows.append(row)
    }

    public func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        openRows.removeLast()
    }

    public func count(_ name: String, class className: String) -> Int {
        elements.filter { $0.name == name && $0.className == className }.count
    }

    public func all(_ name: String, class className: String) -> [Element] {
        elements.filter { $0.name == name && $0.className == className }
    }
}

/// A small, fixed scene: a chain of three, three independent operations, two cancelled
/// before they start, on one queue with a limit of 2.
public func recordSmallScene() -> Recording {
    let recorder = OperationRecorder(title: "Small scene")
    let queue = OperationQueue()
    queue.name = "scene"
    queue.maxConcurrentOperationCount = 2
    queue.isSuspended = true
    recorder.record(queue)
    let load = BlockOperation {}.named("load 1")
    let filter = BlockOperation {}.named("filter 1")
    let write = BlockOperation {}.named("write 1")
    filter.addDependency(load)
    write.addDependency(filter)
    let independent = (1...3).map { BlockOperation {}.named("side \($0)") }
    let doomed = (1...2).map { BlockOperation {}.named("doomed \($0)") }
    queue.addOperations([load, filter, write] + independent + doomed, waitUntilFinished: false)
    for operation in doomed { operation.cancel() }
    queue.isSuspended = false
    queue.waitUntilAllOperationsAreFinished()
    return recorder.stop()
}

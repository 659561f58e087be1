import Testing

extension Array where Element == UInt8 {
    /// Whether the bytes, read as UTF-8, contain every fragment.
    public func containsText(_ fragments: String...) -> Bool {
        let text = String(decoding: self, as: UTF8.self)
        return fragments.allSatisfy { text.contains($0) }
    }
}

extension Optional where Wrapped == Bool {
    /// Records an issue unless the exit test ran and its output matched.
    public func check(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(self == true, "the child's standard error lacks the expected message", sourceLocation: sourceLocation)
    }
}

extension Optional where Wrapped == ExitTest.Result {
    /// Records an issue, showing the child's standard error, unless it printed nothing.
    public func expectQuietChild(sourceLocation: SourceLocation = #_sourceLocation) {
        guard let result = self else { return }
        let text = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(text.isEmpty, "child's standard error: \(text)", sourceLocation: sourceLocation)
    }
}

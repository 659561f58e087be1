extension NSObject {
    /// Tells observers that `key` is about to change. Used for the library's own state
    /// changes; cheap when nothing observes the object.
    @inline(__always)
    func _announceWillChange(_ key: String) {
        #if canImport(ObjectiveC)
        willChangeValue(forKey: key)
        #else
        _observationRegistry?.willChange(self, key: key)
        #endif
    }

    /// Tells observers that `key` has changed.
    @inline(__always)
    func _announceDidChange(_ key: String) {
        #if canImport(ObjectiveC)
        didChangeValue(forKey: key)
        #else
        _observationRegistry?.didChange(self, key: key)
        #endif
    }

    /// The object's address, for names and messages ("0x…").
    var _address: String {
        "0x" + String(UInt(bitPattern: ObjectIdentifier(self)), radix: 16)
    }

    /// Whether anything observes this object (always true on Darwin, where KVO decides).
    var _hasObservers: Bool {
        #if canImport(ObjectiveC)
        true
        #else
        _hasObservationRegistry
        #endif
    }
}

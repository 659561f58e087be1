@testable import Operations
import Testing

/// The per-class set read without a lock, and the spelling rules of observed keys that
/// every announcement goes through.
@Suite("Class set and observation keys")
struct ClassSetAndKeyTests {
    final class First {}
    final class Second {}
    class Base {}
    final class Derived: Base {}
    /// Its specializations are distinct classes with distinct metadata.
    final class Box<T> {}

    @Test("a class is in the set once inserted, and only that class")
    func membership() {
        let set = ClassSet()
        #expect(!set.contains(First.self))
        set.insert(First.self)
        set.insert(First.self)
        #expect(set.contains(First.self))
        #expect(!set.contains(Second.self))
        set.insert(Base.self)
        #expect(set.contains(Base.self))
        #expect(!set.contains(Derived.self), "a subclass is a class of its own")
    }

    @Test("a full set drops further classes and still answers for those it holds")
    func fullSet() {
        let set = ClassSet()
        let types: [AnyClass] = [
            Box<Int8>.self, Box<Int16>.self, Box<Int32>.self, Box<Int64>.self, Box<UInt8>.self,
            Box<UInt16>.self, Box<UInt32>.self, Box<UInt64>.self, Box<Int>.self, Box<UInt>.self,
            Box<Float>.self, Box<Double>.self, Box<String>.self, Box<Bool>.self, Box<Character>.self,
            Box<[Int]>.self, Box<[String]>.self, Box<[Bool]>.self, Box<Set<Int>>.self, Box<Set<String>>.self,
            Box<Int?>.self, Box<String?>.self, Box<Bool?>.self, Box<Double?>.self, Box<[Int]?>.self,
            Box<First>.self, Box<Second>.self, Box<Base>.self, Box<Derived>.self, Box<Void>.self,
            Box<(Int, Int)>.self, Box<(Int, String)>.self, Box<(Bool, Bool)>.self, Box<[Double]>.self,
            Box<[Float]>.self, Box<[Character]>.self, Box<[UInt8]>.self, Box<[Int8]>.self,
            Box<[Int16]>.self, Box<[Int32]>.self, Box<[Int64]>.self, Box<[UInt16]>.self,
            Box<[UInt32]>.self, Box<[UInt64]>.self, Box<[UInt]>.self, Box<Set<Bool>>.self,
            Box<Set<Double>>.self, Box<Set<Character>>.self, Box<Set<UInt8>>.self, Box<Set<Int8>>.self,
            Box<[First]>.self, Box<[Second]>.self, Box<[Base]>.self, Box<[Derived]>.self,
            Box<First?>.self, Box<Second?>.self, Box<Base?>.self, Box<Derived?>.self,
            Box<[Int: Int]>.self, Box<[String: Int]>.self, Box<[Int: String]>.self,
            Box<[String: String]>.self, Box<[Bool: Int]>.self, Box<[Int: Bool]>.self,
            Box<[Int8: Int]>.self, Box<[Int16: Int]>.self, Box<[Int32: Int]>.self, Box<[Int64: Int]>.self,
        ]
        #expect(Set(types.map(ObjectIdentifier.init)).count == types.count)
        for type in types { set.insert(type) }
        let held = types.filter { set.contains($0) }
        #expect(held.count == 64, "the set holds 64 classes")
        #expect(set.contains(types[0]))
    }

    @Test("both spellings of the state keys name the state; other keys name none")
    func stateKeys() {
        #expect(ObservationKey.stateKey("isReady") == .isReady)
        #expect(ObservationKey.stateKey("ready") == .isReady)
        #expect(ObservationKey.stateKey("isExecuting") == .isExecuting)
        #expect(ObservationKey.stateKey("executing") == .isExecuting)
        #expect(ObservationKey.stateKey("isFinished") == .isFinished)
        #expect(ObservationKey.stateKey("finished") == .isFinished)
        #expect(ObservationKey.stateKey("isCancelled") == .isCancelled)
        #expect(ObservationKey.stateKey("cancelled") == .isCancelled)
        for key in ["state", "isAsynchronous", "concurrent", "operations", "isFinishe", "isFinishedX", "", "Ready"] {
            #expect(ObservationKey.stateKey(key) == nil, "\(key)")
        }
    }

    @Test("short spellings become the canonical ones; other keys stay as they are")
    func canonicalKeys() {
        let pairs = [
            ("ready", "isReady"), ("executing", "isExecuting"), ("finished", "isFinished"),
            ("cancelled", "isCancelled"), ("asynchronous", "isAsynchronous"), ("concurrent", "isConcurrent"),
            ("suspended", "isSuspended"),
        ]
        for (short, canonical) in pairs {
            #expect(ObservationKey.canonical(short) == canonical)
            #expect(ObservationKey.canonical(canonical) == canonical)
        }
        for key in ["state", "name", "operations", "operationCount", "queuePriority", ""] {
            #expect(ObservationKey.canonical(key) == key)
        }
    }
}

// Temporary files of whole-file replacements: owner-only, exclusive, removed on error, and swept
// only once their writer is gone.

import CofferCrypto
import CofferTestSupport
import Foundation
import Testing

@Suite("Durable file temporaries")
struct DurableFileTests {
    static func folder() throws -> URL {
        let url = TemporaryFolders.path("coffer-durable")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func names(_ folder: URL) throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() }

    @Test("a temporary file is 0600, and a sweep leaves it while its writer holds it")
    func liveWriterKept() throws {
        let folder = try Self.folder()
        // Under this process's umask: a permissive umask (000) is process-wide, and the suite runs
        // in parallel, so that case is proven in child processes (StoreModesTests: every file a
        // `coffer` run under umask 000 writes, these temporaries' renamed results among them, is 0600).
        let (fd, temporary) = try DurableFile.createTemporary(beside: folder.appendingPathComponent("vault"))
        let mode = (try FileManager.default.attributesOfItem(atPath: temporary.path)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600)
        #expect(DurableFile.isTemporaryName(temporary.lastPathComponent))
        #expect(DurableFile.sweepTemporaries(in: folder).isEmpty)
        #expect(FileManager.default.fileExists(atPath: temporary.path))
        close(fd)
        // Its writer is gone (as when the process is killed): the next sweep removes it.
        #expect(DurableFile.sweepTemporaries(in: folder) == [temporary.lastPathComponent])
        #expect(try Self.names(folder).isEmpty)
    }

    @Test("a sweep touches only names of the temporary form")
    func onlyTemporaryNames() throws {
        let folder = try Self.folder()
        let keep = ["vault", ".vault.tmp", ".vault.not-a-uuid.tmp", "x.\(UUID().uuidString).tmp", ".backup.cfb.partial"]
        for name in keep { try Data("x".utf8).write(to: folder.appendingPathComponent(name)) }
        let stale = ".vault.\(UUID().uuidString).tmp"
        try Data("old vault".utf8).write(to: folder.appendingPathComponent(stale))
        #expect(DurableFile.sweepTemporaries(in: folder) == [stale])
        #expect(try Self.names(folder) == keep.sorted())
    }

    @Test("a replacement that fails leaves no temporary file")
    func failedWriteRemoves() throws {
        let folder = try Self.folder()
        // The target is a folder that is not empty: the rename fails after the write.
        let target = folder.appendingPathComponent("target")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        try Data("x".utf8).write(to: target.appendingPathComponent("inside"))
        #expect(throws: FileOperationError.self) { try DurableFile.write(Data("new".utf8), to: target) }
        #expect(try Self.names(folder) == ["target"])
    }

    @Test("a second export to a target whose first export is alive is refused and leaves the first one's file")
    func liveExportRefused() throws {
        let folder = try Self.folder()
        let target = folder.appendingPathComponent("backup.cfb")
        let first = try DurableFileWriter(target: target)
        try first.write(Data("part".utf8))
        #expect(throws: FileOperationError.self) { _ = try DurableFileWriter(target: target) }
        try first.write(Data("s".utf8))
        try first.commit()
        #expect(try Data(contentsOf: target) == Data("parts".utf8))
        // A partial file whose writer is gone is removed by the next writer.
        try Data("dead".utf8).write(to: DurableFileWriter.partialURL(for: target))
        let next = try DurableFileWriter(target: target)
        try next.write(Data("new".utf8))
        try next.commit()
        #expect(try Data(contentsOf: target) == Data("new".utf8))
        #expect(try Self.names(folder) == ["backup.cfb"])
    }
}

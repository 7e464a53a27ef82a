'use strict';
// Runs s3rver with S3's own promise that a PUT replaces an object whole:
//   node s3rver.js NODE_DIR ARGS...   (NODE_DIR/node_modules/s3rver, ARGS its own)
//
// S3 keeps the previous object until a PUT's whole body is in (a body cut
// short is refused with IncompleteBody), so a reader sees the old bytes or
// the new ones, never a part. s3rver's filesystem store writes into the
// object's own file instead: it truncates it first and fills it as the body
// arrives, so a GET during a PUT reads an empty or partial object, and a
// client killed mid-body leaves one for good. The S3 workspace store's crash
// safety (engine/store/s3.c: objects, then the manifest, then `latest`, each
// one PUT) rests on that promise, and the kill -9 test in
// tests/unit/test_home_s3.c read a `latest` s3rver was still rewriting
// (about one run in four under load). Here every object and its metadata
// are written to a temporary file beside it and renamed into place once
// whole; a body that ends early is dropped and the old object stays.

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { Transform } = require('stream');
const { pipeline } = require('stream/promises');

const dir = path.resolve(process.argv[2] || '.', 'node_modules', 's3rver');
process.argv.splice(2, 1);
const FilesystemStore = require(path.join(dir, 'lib', 'stores', 'filesystem.js'));
const S3Error = require(path.join(dir, 'lib', 'models', 'error.js'));

let seq = 0;

// A name beside file that s3rver's listings skip (they want a
// "._S3rver_<resource>" ending).
function tmpName(file) {
  seq += 1;
  return `${file}.${process.pid}-${seq}.tmp`;
}

const putMetadata = FilesystemStore.prototype.putMetadata;

// s3rver's own putMetadata (which picks what metadata is kept), writing
// into temporary files that then replace the real ones.
FilesystemStore.prototype.putMetadata = async function (bucket, key, metadata, md5) {
  const renames = [];
  const into = Object.create(this);
  into.getResourcePath = (b, k, resource) => {
    const file = this.getResourcePath(b, k, resource);
    const tmp = tmpName(file);
    renames.push([tmp, file]);
    return tmp;
  };
  try {
    await putMetadata.call(into, bucket, key, metadata, md5);
    for (const [tmp, file] of renames) await fs.promises.rename(tmp, file);
  } catch (err) {
    await Promise.all(renames.map(([tmp]) => fs.promises.rm(tmp, { force: true })));
    throw err;
  }
};

FilesystemStore.prototype.putObject = async function (object) {
  const file = this.getResourcePath(object.bucket, object.key, 'object');
  await fs.promises.mkdir(path.dirname(file), { recursive: true });
  const tmp = tmpName(file);
  const md5 = crypto.createHash('md5');
  let size = 0;
  try {
    if (Buffer.isBuffer(object.content)) {
      await fs.promises.writeFile(tmp, object.content);
      md5.update(object.content);
      size = object.content.length;
    } else {
      const count = new Transform({
        transform(chunk, encoding, callback) {
          md5.update(chunk, encoding);
          size += chunk.length;
          callback(null, chunk);
        },
      });
      // rejects when the client goes away before the end of the body
      await pipeline(object.content, count, fs.createWriteStream(tmp));
      const req = object.content;
      const want = req.headers && req.headers['content-length'];
      if (req.complete === false || (want !== undefined && Number(want) !== size)) {
        throw new S3Error(
          'IncompleteBody',
          'You did not provide the number of bytes specified by the Content-Length HTTP header',
        );
      }
    }
    const sum = md5.digest('hex');
    await this.putMetadata(object.bucket, object.key, object.metadata, sum);
    await fs.promises.rename(tmp, file); // the object is there, whole
    return { size, md5: sum };
  } catch (err) {
    await fs.promises.rm(tmp, { force: true });
    throw err;
  }
};

require(path.join(dir, 'bin', 's3rver.js'));

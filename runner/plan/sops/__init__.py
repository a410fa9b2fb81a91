"""The SOPS document format, decrypted in memory (the runner's decryption step; pure, no I/O).

``cipher`` reads one ``ENC[AES256_GCM,...]`` value; ``tree`` reads the ``sops`` metadata,
unwraps the data key with age identities, walks a document as sops does (which values are
encrypted, each value's path as additional data) and checks the MAC; ``stores`` reads and
writes the dotenv, INI, YAML and JSON documents a Secret entry can hold; ``objects`` decides,
per Kubernetes object, what Flux's kustomize-controller would decrypt. The age part is the
``pyrage`` library and AES-GCM is ``cryptography``'s: this package only reads the format.
Plaintext lives in the returned objects only: no message here ever carries a value.
"""

// AWS Signature Version 4 for the S3 object store and the SES domain adapter: the signer is shared with
// the tee node's KMS client, so it lives in common/aws-sigv4.ts.
export * from '../../common/aws-sigv4.ts';

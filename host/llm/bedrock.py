"""Claude on Amazon Bedrock: the anthropic SDK's Bedrock client behind the same model as the Anthropic API.

Requests, prompt caching (cache_control breakpoints, which Bedrock takes for
Claude), thinking and replies are the Anthropic model's; only the client
differs. It signs each request with SigV4, credentials from the standard AWS
chain (environment, ~/.aws, an instance role), in the region from the config
(`model.region`) or AWS_REGION / AWS_DEFAULT_REGION. Model ids are Bedrock's
(`global.anthropic.claude-sonnet-5`); soulstack.llm.prices prices them as their
family.
"""

import anthropic

from soulstack.llm.anthropic import AnthropicModel
from soulstack.llm.types import ModelError

NO_CREDENTIALS = (
    "amazon-bedrock: no AWS credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
    "or AWS_PROFILE with ~/.aws, or give this computer an instance role"
)

DEFAULT_MODEL = "global.anthropic.claude-sonnet-5-5"


class BedrockModel(AnthropicModel):
    provider = "amazon-bedrock"

    def __init__(self, model_id: str = DEFAULT_MODEL, region: str | None = None, **options):
        self.region = region
        super().__init__(model_id, **options)

    def make_client(self, env, api_key, base_url, timeout_s):
        region = self.region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        if not region:
            raise ValueError("no AWS region for Bedrock: set model.region in the config, or AWS_REGION")
        # ANTHROPIC_BEDROCK_BASE_URL (read by the SDK) points it elsewhere, e.g. a VPC endpoint.
        self.base_url = base_url or env.get("ANTHROPIC_BEDROCK_BASE_URL") or None
        return anthropic.AsyncAnthropicBedrock(
            aws_region=region, base_url=self.base_url, timeout=timeout_s, max_retries=0
        )

    async def send(self, params, relay):
        try:
            return await super().send(params, relay)
        except RuntimeError as err:
            # The SDK signs each request itself and raises a plain RuntimeError when the AWS chain has no
            # credentials: a failure of the model like any other (the waking goes on with the brainstem).
            if "credentials" not in str(err).lower():
                raise
            raise relay.broken(ModelError(NO_CREDENTIALS, 0, False)) from err

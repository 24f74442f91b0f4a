DROP TABLE system_prompt_particles;
DROP TABLE system_prompts;
DROP TABLE particle_versions;
DROP TABLE particles;
